import pytest
import yaml

from keras_s2s import tasks, zoo
from keras_s2s.cards import apply_overrides, load_card
from keras_s2s.config import LENGTH_PENALTY, CardError, parse_override


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
    assert {"gnmt", "transformer", "convs2s", "jasper", "wave2letter", "deepspeech2"} <= set(
        zoo.list_models()
    )


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
        (
            lambda c: c["model"].update({"units": "big"}),
            "'model.units' must be a whole number of at least 1, got 'big'",
        ),
        (lambda c: c["training"].update({"precision": "fp16"}), "one of 'auto', 'float32'"),
        (
            lambda c: c["data"].update({"batch_size": 12.5}),
            "'data.batch_size' must be a whole number of at least 1",
        ),
        (
            lambda c: c["data"].update({"batch_size": 0}),
            "'data.batch_size' must be a whole number of at least 1, got 0",
        ),
        (
            lambda c: c["training"].update({"epochs": -1}),
            "'training.epochs' must be a whole number of at least 1",
        ),
        (lambda c: c["training"].update({"jit_compile": "yes"}), "must be boolean"),
        # refused with the card, before a card or tokenizer is written (was: by the callback)
        (
            lambda c: c["training"].update({"lr_floor": -1}),
            "'training.lr_floor' must be a number from 0 to 1, got -1",
        ),
        (
            lambda c: c["training"].update({"validation": {"min_delta": float("inf")}}),
            "'training.validation.min_delta' must be a number of at least 0, got inf",
        ),
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
    card = zoo.get_card(
        "gnmt",
        units=256,
        num_layers=2,
        precision="float32",
        **{"training.loss_scale.initial_scale": 8.0},
    )
    assert card.model["units"] == 256 and card.model["num_layers"] == 2
    assert card.training["precision"] == "float32"
    assert card.training["loss_scale"]["initial_scale"] == 8.0
    assert zoo.get_card("gnmt").model["units"] == 1024  # the card file is untouched
    with pytest.raises(
        CardError, match="'model.units' must be a whole number of at least 1, got 'many'"
    ):
        zoo.get_card("gnmt", units="many")
    with pytest.raises(CardError, match="unknown setting.*did you mean 'units'"):
        zoo.get_card("gnmt", unitz=3)


def test_parse_override_reads_yaml_values():
    assert parse_override("units=256") == ("units", 256)
    assert parse_override("training.learning_rate=2e-3") == ("training.learning_rate", 0.002)
    assert parse_override("jit_compile=true") == ("jit_compile", True)
    with pytest.raises(CardError, match="key=value"):
        parse_override("units")
    assert apply_overrides({"architecture": "gnmt", "model": {}}, {"units": 3})["model"] == {
        "units": 3
    }


def test_a_bare_override_sets_every_part_that_has_the_key():
    card = zoo.get_card("transformer_demo", vocab_size=500, seed=7, label_smoothing=0.2)
    assert card.data["vocab_size"] == 500 and "vocab_size" not in card.model, "stated once, in data"
    assert tasks.for_card(card).model_arguments(card)["vocab_size"] == 500, (
        "the model takes it from there"
    )
    assert card.data["seed"] == 7 and card.training["seed"] == 7
    assert card.training["label_smoothing"] == 0.2
    with pytest.raises(
        CardError, match="'data.tokenization' must be one of 'sentencepiece', 'pretokenized'"
    ):
        zoo.get_card("transformer_demo", tokenization="bpe")


def write(path, text):
    path.write_text(text)
    return path


def test_a_card_states_only_what_differs_from_its_base(tmp_path):
    big = zoo.get_card("transformer_big")
    base = zoo.get_card("transformer")
    assert big.model["d_model"] == 1024 and big.model["num_layers"] == base.model["num_layers"] == 6
    assert (
        big.training["learning_rate"] == 0.0005
        and big.training["warmup_steps"] == base.training["warmup_steps"]
    )
    assert big.name == "transformer_big" and big.description != base.description
    demo = zoo.get_card("gnmt_demo")
    assert (
        demo.presets == zoo.get_card("gnmt").presets and zoo.get_card("wave2letter").presets == {}
    ), "presets are not inherited (wave2letter must not load jasper's)"
    write(
        tmp_path / "parent.yaml",
        "architecture: gnmt\nmodel: {units: 32, num_layers: 2}\n"
        "data: {source: demo, vocab_size: 100}\ntraining: {epochs: 2, loss_scale: {initial_scale: 8.0}}\n",
    )
    child = load_card(
        write(
            tmp_path / "child.yaml",
            "base: parent.yaml\nmodel: {units: 16}\n"
            "training: {loss_scale: {growth_interval: 10}}\n",
        )
    )
    assert child.name == "child" and child.model == {"units": 16, "num_layers": 2}
    assert child.training["loss_scale"] == {"initial_scale": 8.0, "growth_interval": 10}, (
        "mappings merge"
    )
    assert load_card(tmp_path / "child.yaml", {"units": 8}).model["units"] == 8


def test_base_card_errors_name_the_card(tmp_path):
    write(tmp_path / "a.yaml", "base: b.yaml\narchitecture: gnmt\n")
    write(tmp_path / "b.yaml", "base: a.yaml\n")
    with pytest.raises(CardError, match="leads back to itself"):
        load_card(tmp_path / "a.yaml")
    with pytest.raises(CardError, match="unknown model 'transformr'.*Did you mean 'transformer'"):
        load_card(write(tmp_path / "c.yaml", "base: transformr\n"))
    with pytest.raises(CardError, match="model card not found: .*missing.yaml"):
        load_card(write(tmp_path / "d.yaml", "base: missing.yaml\n"))
    with pytest.raises(CardError, match="'base' must name a card"):
        load_card(write(tmp_path / "e.yaml", "base: 3\n"))
    with pytest.raises(CardError, match="e.yaml.*unknown key 'model.unitz'"):
        load_card(write(tmp_path / "e.yaml", "base: transformer\nmodel: {unitz: 3}\n"))


def test_a_key_set_twice_is_refused_with_both_lines(tmp_path):
    text = "architecture: gnmt\nmodel:\n  units: 8\n  units: 16\ndata: {}\ntraining: {}\n"
    with pytest.raises(
        CardError, match=r"twice.yaml, line 4: 'model.units' is set twice \(first on line 3\)"
    ):
        load_card(write(tmp_path / "twice.yaml", text))


def test_a_card_without_a_name_is_named_after_its_file_whatever_the_overrides(tmp_path, capsys):
    """Once named from the override text: "ok" for --data corp/ok.tsv, or a name TensorFlow
    refused as a scope at fit time."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from tiny import TINY_GNMT, flags

    from keras_s2s.cli import main

    card = tmp_path / "my card (v2).yaml"
    card.write_text("base: gnmt_demo\n")
    assert load_card(card).name == "my_card__v2_"
    assert load_card(card, {"data.source": "corp/ok.tsv"}).name == "my_card__v2_"
    assert load_card(card, {"units": 32, "data.source": "demo"}).name == "my_card__v2_"
    out = tmp_path / "run"
    command = ["train", str(card), "--data", "demo", "--epochs", "1", "--out", str(out)]
    assert main([*command, *TINY_GNMT, *flags(steps_per_epoch=1)]) == 0
    assert yaml.safe_load((out / "card.yaml").read_text())["name"] == "my_card__v2_"


def test_a_base_chain_too_deep_is_refused_by_name_not_by_recursion(tmp_path, capsys):
    from keras_s2s.cli import main

    for level in range(1200):  # card 0 -> card 1 -> ... -> card 1199 -> gnmt_demo
        base = f"c{level + 1}.yaml" if level < 1199 else "gnmt_demo"
        (tmp_path / f"c{level}.yaml").write_text(f"base: {base}\n")
    with pytest.raises(CardError, match=r"c0.yaml: its chain of base cards is more than 32 deep"):
        load_card(tmp_path / "c0.yaml")
    assert main(["train", str(tmp_path / "c0.yaml"), "--out", str(tmp_path / "run")]) == 2
    assert "more than 32 deep" in capsys.readouterr().err
    assert load_card(tmp_path / "c1180.yaml").architecture == "gnmt"  # 20 levels: fine


def test_an_alias_bomb_is_refused_before_it_expands_and_a_small_alias_still_works(tmp_path, capsys):
    from keras_s2s.cli import main

    levels = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for name, previous in zip("bcdefghi", "abcdefgh"):
        levels.append(f"{name}: &{name} [{', '.join([f'*{previous}'] * 9)}]")
    bomb = write(tmp_path / "bomb.yaml", "base: gnmt_demo\n" + "\n".join(levels) + "\n")
    with pytest.raises(CardError, match=r"bomb.yaml: its aliases \(\*name\) expand it to 4"):
        load_card(bomb)  # 387,420,489 "lol"s: before, the key-line map walked them all
    assert main(["train", str(bomb), "--out", str(tmp_path / "run")]) == 2
    assert "more than the 100,000 a card may hold" in capsys.readouterr().err
    small = "base: gnmt_demo\ntraining:\n  learning_rate: &rate 0.002\n  lr_floor: *rate\n"
    assert load_card(write(tmp_path / "small.yaml", small)).training["lr_floor"] == 0.002


def test_a_card_or_override_nested_thousands_deep_is_refused_by_name(tmp_path, capsys):
    """The YAML reader recurses once per level: a RecursionError traceback before."""
    from keras_s2s.cli import main

    deep = "[" * 3000 + "]" * 3000
    nested = "{a: " * 3000 + "1" + "}" * 3000
    for name, value in (("lists", deep), ("maps", nested)):
        card = write(tmp_path / f"{name}.yaml", f"base: gnmt_demo\nmodel:\n  units: {value}\n")
        with pytest.raises(CardError, match=f"{name}.yaml: nested too deeply"):
            load_card(card)
    run = tmp_path / "run"
    assert main(["train", "gnmt_demo", "--set", f"model.units={deep}", "--out", str(run)]) == 2
    assert "--set model.units: nested too deeply" in capsys.readouterr().err
    assert not run.exists(), "nothing written"
    long_value = "[" + ", ".join(["1"] * 5000) + "]"
    assert (
        main(["train", "gnmt_demo", "--set", f"model.units={long_value}", "--out", str(run)]) == 2
    )
    assert "characters)" in capsys.readouterr().err.split("):")[0], "the echoed override is cut"


def test_a_card_takes_only_its_tasks_data_keys(tmp_path, capsys):
    """A speech key on a translation card was a TypeError traceback when the data loaded: each task
    owns its data schema, and a key of another task is refused by file, line and the valid keys."""
    from keras_s2s.cli import main

    with pytest.raises(CardError, match=r"unknown key 'data.min_duration' of a translation card"):
        zoo.get_card("gnmt_demo", **{"data.min_duration": 1.0})
    with pytest.raises(CardError, match=r"'data.tokenization' of a recognition card"):
        zoo.get_card("jasper_demo", **{"data.tokenization": "pretokenized"})
    with pytest.raises(CardError, match=r"'data.augment' of a synthesis card"):
        zoo.get_card("tacotron2_demo", **{"data.augment": {}})
    with pytest.raises(CardError, match=r"override 'min_duration': unknown setting"):
        zoo.get_card("gnmt_demo", min_duration=1.0)  # a bare key finds no home on this card
    assert zoo.get_card("jasper_demo", min_duration=0.5).data["min_duration"] == 0.5
    card = write(tmp_path / "mixed.yaml", "base: gnmt_demo\ndata:\n  source: demo\n  augment: {}\n")
    with pytest.raises(CardError) as error:
        zoo.get_card(str(card))
    assert f"{card}, line 4: unknown key 'data.augment' of a translation card" in str(error.value)
    assert "Valid keys here: batch_size, batch_tokens, bucket_width," in str(error.value)
    assert main(["train", str(card), "--out", str(tmp_path / "run")]) == 2
    assert "line 4: unknown key 'data.augment' of a translation card" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_each_task_owns_its_decoding_options(tmp_path, capsys):
    """A recognizer's LM option on a translation model (or a translation option on a recognizer) was
    swallowed by `**_`; now the task names the options its models decode with."""
    import shutil

    from keras_s2s.cli import main

    assert tasks.get("translation").decoding(beam_width=4) == {
        "beam_width": 4,
        "length_penalty": LENGTH_PENALTY,
        "coverage_penalty": 0.0,
        "loop_guard": True,
    }
    assert tasks.get("recognition").decoding(lm="lm.arpa")["alpha"] == 0.5
    with pytest.raises(ValueError, match=r"beam_width: not a decoding option of a speech synth"):
        tasks.get("synthesis").decoding(beam_width=2)
    with pytest.raises(ValueError, match=r"--grid scores a translation model's beam widths"):
        tasks.get("recognition").decoding_grid(None, None, None)
    run = tmp_path / "run"  # refused before the model would load: a card is all it takes
    run.mkdir()
    shutil.copy(zoo.card_path("gnmt_demo"), run / "card.yaml")
    assert main(["evaluate", "--model", str(run), "--lm", "words.arpa"]) == 2
    error = capsys.readouterr().err
    assert "lm: not a decoding option of a translation model (its options: beam_width, " in error
    assert main(["evaluate", "--model", "jasper_english:english", "--length-penalty", "1"]) == 2
    assert "length_penalty: not a decoding option of a speech recognizer" in capsys.readouterr().err


def test_a_card_takes_only_its_tasks_training_keys(tmp_path, capsys):
    """label_smoothing on a recognizer card validated and did nothing: each task owns its training
    keys beside every task's, refused by file and line before anything is written."""
    from keras_s2s.cli import main

    assert zoo.get_card("gnmt_demo", label_smoothing=0.1).training["label_smoothing"] == 0.1
    with pytest.raises(CardError, match=r"'training.label_smoothing' must be a number from 0 to"):
        zoo.get_card("gnmt_demo", label_smoothing=1.0)
    with pytest.raises(CardError, match=r"override 'label_smoothing': unknown setting"):
        zoo.get_card("jasper_demo", label_smoothing=0.1)
    card = write(tmp_path / "asr.yaml", "base: jasper_demo\ntraining:\n  label_smoothing: 0.1\n")
    with pytest.raises(CardError) as error:
        zoo.get_card(str(card))
    assert f"{card}, line 3: unknown key 'training.label_smoothing' of a recognition card" in str(
        error.value
    )
    assert main(["train", str(card), "--out", str(tmp_path / "run")]) == 2
    assert "unknown key 'training.label_smoothing' of a recognition card" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_decode_max_length_is_a_model_setting_and_old_cards_keep_working(tmp_path, caplog):
    """It sat under `training` and was copied into the model's arguments; an old card (or a run's
    card.yaml) with it there is read with a notice, and a resumed run does not see it as changed."""
    from keras_s2s.training.runner import check_run_dir

    card = zoo.get_card("gnmt_demo")
    assert card.model["decode_max_length"] == 96 and "decode_max_length" not in card.training
    assert zoo.get_card("gnmt_demo", decode_max_length=12).model["decode_max_length"] == 12
    old = write(tmp_path / "old.yaml", "base: gnmt_demo\ntraining:\n  decode_max_length: 20\n")
    with caplog.at_level("WARNING", logger="keras_s2s"):
        card = zoo.get_card(str(old))
    assert card.model["decode_max_length"] == 20, "the old place, set by the card itself, wins"
    assert f"{old}: 'training.decode_max_length' is a model setting now" in caplog.text
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "epoch-001.weights.h5").write_bytes(b"trained")
    saved = card.to_dict()
    saved["training"]["decode_max_length"] = saved["model"].pop("decode_max_length")
    (run / "card.yaml").write_text(yaml.safe_dump(saved))  # as a run of last week wrote it
    check_run_dir(run, card)  # no "settings differ"
    saved["training"]["decode_max_length"] = 30
    (run / "card.yaml").write_text(yaml.safe_dump(saved))
    with pytest.raises(ValueError, match=r"model.decode_max_length \(30 -> 20\)"):
        check_run_dir(run, card)
