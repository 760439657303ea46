import pytest
import yaml

from keras_s2s import zoo
from keras_s2s.config import CardError, apply_overrides, load_card, parse_override


def write_card(tmp_path, mutate):
    card = yaml.safe_load(zoo.card_path("gnmt").read_text())
    mutate(card)
    path = tmp_path / "card.yaml"
    path.write_text(yaml.safe_dump(card, sort_keys=False))
    return path


def test_every_zoo_card_is_valid():
    assert "gnmt" in zoo.list_models()
    for name in zoo.list_models():
        card = zoo.get_card(name)
        assert card.architecture and card.model and card.training


def test_unknown_model_names_closest_match_and_the_list():
    with pytest.raises(CardError) as err:
        zoo.get_card("gmnt")
    assert "did you mean 'gnmt'" in str(err.value).lower()
    assert "Available models: " + ", ".join(zoo.list_models()) in str(err.value)
    assert {"gnmt", "transformer", "convs2s", "jasper", "wave2letter", "deepspeech2"} <= set(zoo.list_models())


def test_mistyped_key_names_key_card_line_and_valid_keys(tmp_path):
    path = write_card(tmp_path, lambda c: c["training"].update({"learnig_rate": 0.1}))
    with pytest.raises(CardError) as err:
        load_card(path)
    message = str(err.value)
    assert "training.learnig_rate" in message and str(path) in message
    assert "did you mean 'learning_rate'" in message
    assert "Valid keys here:" in message and "warmup_steps" in message
    line = path.read_text().splitlines().index("  learnig_rate: 0.1") + 1
    assert f"line {line}" in message


def test_unknown_model_argument_lists_constructor_arguments(tmp_path):
    path = write_card(tmp_path, lambda c: c["model"].update({"unit": 12}))
    with pytest.raises(CardError, match=r"model.unit.*did you mean 'units'.*num_layers"):
        load_card(path)


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda c: c["model"].update({"units": "big"}), "'model.units' must be a whole number of at least 1, got 'big'"),
        (lambda c: c["training"].update({"precision": "fp16"}), "one of 'auto', 'float32'"),
        (lambda c: c["data"].update({"batch_size": 12.5}), "'data.batch_size' must be a whole number of at least 1"),
        (lambda c: c["data"].update({"batch_size": 0}), "'data.batch_size' must be a whole number of at least 1, got 0"),
        (lambda c: c["training"].update({"epochs": -1}), "'training.epochs' must be a whole number of at least 1"),
        (lambda c: c["training"].update({"jit_compile": "yes"}), "must be boolean"),
        (lambda c: c.update({"training": [1, 2]}), "'training' must be mapping"),
        (lambda c: c.pop("data"), "missing required key 'data'"),
        (lambda c: c.update({"architecture": "gnmtt"}), "unknown architecture 'gnmtt'"),
    ],
)
def test_wrong_types_name_the_expected_type(tmp_path, mutate, expected):
    with pytest.raises(CardError, match=expected):
        load_card(write_card(tmp_path, mutate))


def test_invalid_yaml_and_missing_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: [unclosed\n")
    with pytest.raises(CardError, match="not valid YAML"):
        load_card(bad)
    with pytest.raises(CardError, match="not found"):
        load_card(tmp_path / "nope.yaml")


def test_overrides_bare_dotted_and_typed():
    card = zoo.get_card("gnmt", units=256, num_layers=2, precision="float32",
                        **{"training.loss_scale.initial_scale": 8.0})
    assert card.model["units"] == 256 and card.model["num_layers"] == 2
    assert card.training["precision"] == "float32"
    assert card.training["loss_scale"]["initial_scale"] == 8.0
    assert zoo.get_card("gnmt").model["units"] == 1024  # the card file is untouched
    with pytest.raises(CardError, match="'model.units' must be a whole number of at least 1, got 'many'"):
        zoo.get_card("gnmt", units="many")
    with pytest.raises(CardError, match="unknown setting.*did you mean 'units'"):
        zoo.get_card("gnmt", unitz=3)


def test_parse_override_reads_yaml_values():
    assert parse_override("units=256") == ("units", 256)
    assert parse_override("training.learning_rate=2e-3") == ("training.learning_rate", 0.002)
    assert parse_override("jit_compile=true") == ("jit_compile", True)
    with pytest.raises(CardError, match="key=value"):
        parse_override("units")
    assert apply_overrides({"architecture": "gnmt", "model": {}}, {"units": 3})["model"] == {"units": 3}


def test_a_bare_override_sets_every_part_that_has_the_key():
    card = zoo.get_card("transformer_demo", vocab_size=500, seed=7, label_smoothing=0.2)
    assert card.model["vocab_size"] == 500 and card.data["vocab_size"] == 500
    assert card.data["seed"] == 7 and card.training["seed"] == 7
    assert card.training["label_smoothing"] == 0.2
    with pytest.raises(CardError, match="'data.tokenization' must be one of 'sentencepiece', 'pretokenized'"):
        zoo.get_card("transformer_demo", tokenization="bpe")
