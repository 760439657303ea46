"""The open-vocabulary eSpeak NG corpus: splits, voices, shards, resuming, refusals, crashes."""

import csv
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("espeakng_loader")

from keras_s2s.audio.io import read_audio  # noqa: E402
from keras_s2s.audio.manifest import read_manifest  # noqa: E402
from keras_s2s.corpora.english_speech import EnglishSpeech, Rendition, voices_of  # noqa: E402
from keras_s2s.corpora.espeak import english_voices, voice_variants  # noqa: E402
from keras_s2s.text.corpus import CorpusError  # noqa: E402

WORDS = "red green blue small old quiet happy fast".split()
SENTENCES = [
    (f"the {a} dog sees a {b} cat.", f"the {a} dog sees a {b} cat")
    for a in WORDS[:4]
    for b in WORDS[4:]
]


def tiny(sentences=SENTENCES, **kwargs):
    settings = dict(num_valid=2, num_test=3, shard_size=4, voices=["en-US", "en"], variants=["", "f2", "m3"],
                    mbrola_voices=[])  # fmt: skip
    return EnglishSpeech(sentences, **{**settings, **kwargs})


def test_every_english_voice_and_variant_is_offered():
    voices, variants = english_voices(), voice_variants()
    assert {"en", "en-US", "en-GB-scotland", "en-029"} <= set(voices)
    assert all(v.startswith("en") for v in voices)
    assert {"f1", "m3", "klatt", "whisper"} <= set(variants) and len(variants) > 50


def test_the_plan_is_seeded_keeps_held_out_sentences_apart_and_draws_voices_and_prosody():
    plan = tiny().plan()
    assert [len(plan[s]) for s in ("test", "valid", "train")] == [3, 2, 11]
    held_out = {r.transcript for r in plan["test"] + plan["valid"]}
    assert not held_out & {r.transcript for r in plan["train"]}
    assert tiny().plan() == plan and tiny(seed=1).plan() != plan
    everything = [r for split in plan.values() for r in split]
    assert all(120 <= r.words_per_minute <= 220 and 20 <= r.pitch <= 80 for r in everything)
    assert len({r.voice for r in everything}) >= 3, "voices and variants are mixed"


def test_a_corpus_is_built_in_shards_resumes_and_lists_only_whole_shards(tmp_path):
    folder = tiny().build(tmp_path / "corpus", workers=2)
    train = read_manifest(folder / "train.csv")
    assert len(train) == 11 and len(read_manifest(folder / "test.csv")) == 3
    assert sorted(p.name for p in (folder / "shards").iterdir()) == [
        "test-00000", "train-00000", "train-00001", "train-00002", "valid-00000",
    ]  # fmt: skip
    audio = read_audio(train[0].path, 16000)
    assert 0.5 < len(audio) / 16000 < 5 and np.abs(audio).max() > 0.05
    assert set(voices_of(folder, "test").values()) <= {
        "en-US",
        "en",
        "en-US+f2",
        "en+f2",
        "en-US+m3",
        "en+m3",
    }
    # an interrupted build: one shard missing, another half-written
    kept = (folder / "shards" / "train-00000" / "shard.csv").stat().st_mtime_ns
    manifest = (folder / "train.csv").read_text()
    for path in (folder / "shards" / "train-00001").iterdir():
        path.unlink()
    (folder / "shards" / "train-00001").rmdir()
    (folder / "shards" / ".tmp-train-00002").mkdir()
    tiny().build(folder)
    assert (folder / "train.csv").read_text() == manifest
    assert (folder / "shards" / "train-00000" / "shard.csv").stat().st_mtime_ns == kept
    assert not list((folder / "shards").glob(".tmp-*"))


def test_a_folder_with_another_corpus_or_other_files_is_refused(tmp_path):
    tiny(num_test=0).plan()
    folder = tmp_path / "corpus"
    tiny(shard_size=100).build(folder)
    with pytest.raises(CorpusError, match=r"other settings \(seed, shard_size\)"):
        tiny(seed=3).build(folder)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(CorpusError, match="not empty and not a speech corpus"):
        tiny().build(tmp_path / "other")
    assert (tmp_path / "other" / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize(
    "change, message",
    [
        ({"num_valid": 10, "num_test": 6}, "leave none for training"),
        ({"num_valid": -1}, "num_valid must be a count"),
        ({"shard_size": 0}, "shard_size must be a count"),
        ({"words_per_minute": (220, 120)}, r"words_per_minute must be \[low, high\]"),
        ({"pitch": (0, 120)}, "within"),
        ({"mbrola_share": 1.5}, "mbrola_share must be a share"),
        ({"flite_share": -0.1}, "flite_share must be a share"),
        ({"flite_share": 0.5}, "flite_share needs flite_voices"),
        ({"festival_share": 0.5}, "festival_share needs festival_voices"),
        ({"festival_share": 0.7, "flite_share": 0.6}, "flite_share \\+ festival_share must be"),
    ],
)
def test_settings_that_make_no_sense_are_refused(change, message):
    with pytest.raises(ValueError, match=message):
        tiny(**change)
    with pytest.raises(ValueError, match="distinct transcripts"):
        EnglishSpeech(SENTENCES + SENTENCES[:1])


CRASHING = Rendition(
    "this package contains the makeobj program needed to integrate new objects in simutrans.",
    "this package contains the makeobj program needed to integrate new objects in simutrans",
    "en-US+rob", 192, 20, 90,
)  # fmt: skip


def _espeak_crashes_on(rendition) -> bool:
    code = (
        "from keras_s2s.corpora.espeak import synthesize; "
        f"synthesize({rendition.said!r}, {rendition.voice!r}, {rendition.words_per_minute}, "
        f"{rendition.pitch}, {rendition.pitch_range})"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True).returncode < 0


def test_an_utterance_that_crashes_espeak_is_spoken_by_the_plain_voice(tmp_path):
    if not _espeak_crashes_on(CRASHING):
        pytest.skip("this eSpeak NG no longer crashes on the known combination")
    from keras_s2s.corpora.english_speech import ShardJob, _run_in_processes
    from keras_s2s.progress import Progress

    fine = Rendition("a red dog.", "a red dog", "en-US+f2", 160, 50, 50)
    job = ShardJob(tmp_path, "train-00000", [fine, CRASHING, fine], 16000)
    _run_in_processes([job], 1, Progress(3, "utterances", "synthesizing", show=False))
    with open(tmp_path / "train-00000" / "shard.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["voice"] for r in rows] == ["en-US+f2", "en-US", "en-US+f2"]
    assert [r["pitch_range"] for r in rows] == ["50", "50", "50"]
    assert len(list((tmp_path / "train-00000").glob("*.flac"))) == 3


def test_mbrola_voices_speak_their_share_and_a_failing_one_falls_back_to_the_plain_voice(tmp_path):
    from keras_s2s.corpora.english_speech import speak
    from keras_s2s.corpora.espeak import mbrola_voices

    installed = mbrola_voices()
    if "mb-us1" not in installed:
        pytest.skip("needs Debian's espeak-ng, mbrola and mbrola-us1 (contrib, non-free)")
    plan = tiny(mbrola_voices=installed, mbrola_share=0.5).plan()
    voices = [r.voice for split in plan.values() for r in split]
    assert 3 <= sum(v.startswith("mb-") for v in voices) <= 13
    samples, rate, spoken = speak(Rendition("a red dog.", "a red dog", "mb-us1", 160, 40, None))
    assert spoken.voice == "mb-us1" and 0.3 < len(samples) / rate < 3
    _, _, spoken = speak(Rendition("a red dog.", "a red dog", "mb-xx9", 160, 40, None))
    assert spoken.voice == "en-US" and spoken.pitch_range == 50
    folder = tiny(mbrola_voices=["mb-us1"], mbrola_share=1.0).build(tmp_path / "corpus")
    assert set(voices_of(folder, "train").values()) == {"mb-us1"}


def test_the_speech_corpus_command_builds_a_corpus_and_names_bad_sources(tmp_path, capsys):
    from keras_s2s.cli import main

    text = tmp_path / "story.txt"
    text.write_text(" ".join(f"The {a} dog sees a {b} cat." for a, b in zip(WORDS, WORDS[1:])))
    out = tmp_path / "corpus"
    args = ["speech-corpus", "--text", str(text), "--out", str(out), "--num-valid", "1"]
    assert main([*args, "--num-test", "2", "--shard-size", "3"]) == 0
    assert len(read_manifest(out / "train.csv")) == 4 and len(read_manifest(out / "test.csv")) == 2
    assert "7 speakable sentences" in capsys.readouterr().out
    assert main([*args, "--num-test", "3", "--shard-size", "3"]) == 2, "another corpus's folder"
    assert "other settings (num_test)" in capsys.readouterr().err
    assert main([*args, "--num-test", "2", "--flite-share", "0.5"]) == 2
    assert "flite_share needs flite_voices" in capsys.readouterr().err
    festival = ["--festival-voices", "no_such_voice", "--festival-share", "0.5"]
    assert main([*args, "--num-test", "2", *festival]) == 2
    assert "festival voices ['no_such_voice'] are not installed" in capsys.readouterr().err
    assert main(["speech-corpus", "--text", str(tmp_path / "none.txt"), "--out", str(out)]) == 2
    assert "none.txt: text file not found" in capsys.readouterr().err
    (tmp_path / "fortunes").write_text("A fortune you will find today.")
    assert main(["speech-corpus", "--text", str(tmp_path / "fortunes"), "--out", str(out)]) == 2
    assert "kept for independent evaluation" in capsys.readouterr().err


FAKE_FLITE = """\
#!{python}
# flite as far as the corpus builder uses it: -lv, and -voice V --setf K=V ... -f TEXT -o WAV
# (a sine at int_f0_target_mean Hz lasting 0.5 s x duration_stretch; 'mumble' fails)
import math, struct, sys, wave
args = sys.argv[1:]
if args == ["-lv"]:
    print("Voices available: kal awb_time awb")
    sys.exit(0)
settings = dict(a.split("=") for a in args[args.index("--setf") + 1 :: 2] if "=" in a)
text = open(args[args.index("-f") + 1]).read()
if "mumble" in text:
    sys.exit("flite: cannot say that")
rate, seconds = 16000, 0.5 * float(settings["duration_stretch"])
f0 = float(settings["int_f0_target_mean"])
with wave.open(args[args.index("-o") + 1], "wb") as out:
    out.setnchannels(1); out.setsampwidth(2); out.setframerate(rate)
    out.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * f0 * i / rate)))
                             for i in range(int(rate * seconds))))
"""


def _fake_command(folder, monkeypatch, name, script, module):
    """Put the Python `script` on PATH as the command `name` in `folder` and yield the folder,
    with `module`'s cache of installed voices cleared before and after."""
    folder.mkdir()
    (folder / name).write_text(script.format(python=sys.executable))
    (folder / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    module._installed_voices.cache_clear()
    yield folder
    module._installed_voices.cache_clear()


@pytest.fixture
def fake_flite(tmp_path, monkeypatch):
    """A `flite` command on PATH with the voices kal and awb (and the clock-only awb_time)."""
    from keras_s2s.corpora import flite

    yield from _fake_command(tmp_path / "bin", monkeypatch, "flite", FAKE_FLITE, flite)


def test_flite_speaks_at_the_drawn_rate_and_pitch_and_refuses_a_voice_it_lacks(fake_flite):
    from keras_s2s.corpora.flite import FliteError, flite_voices, synthesize_flite

    assert flite_voices() == ["awb", "kal"], "the clock-only awb_time is not a voice"
    samples, rate = synthesize_flite("a red dog", "awb", words_per_minute=90, pitch=100)
    assert rate == 16000 and len(samples) == 16000, "half flite's rate: twice as long"
    spectrum = np.abs(np.fft.rfft(samples))
    assert abs(np.argmax(spectrum) - 2 * 130) <= 2, "pitch 100 is an octave above awb's 130 Hz"
    samples, _ = synthesize_flite("a red dog", "kal", words_per_minute=180, pitch=50)
    assert len(samples) == 8000 and abs(np.argmax(np.abs(np.fft.rfft(samples))) / 0.5 - 95) <= 4
    with pytest.raises(FliteError, match="no voice 'slt'; it has awb, kal"):
        synthesize_flite("a red dog", "slt")
    with pytest.raises(FliteError, match="produced no audio.*cannot say that"):
        synthesize_flite("mumble", "kal")


def test_flite_voices_speak_their_share_of_training_sentences_only(fake_flite, tmp_path):
    from keras_s2s.corpora.english_speech import speak

    plan = tiny(flite_voices=["kal", "awb"], flite_share=0.5).plan()
    trained = [r.voice for r in plan["train"]]
    assert 2 <= sum(v.startswith("flite-") for v in trained) <= 9
    assert not [r for r in plan["test"] + plan["valid"] if r.voice.startswith("flite-")]
    held_out = tiny().plan()
    assert plan["test"] == held_out["test"] and plan["valid"] == held_out["valid"]
    assert "flite_share" not in tiny().settings(), "corpora built before flite stay resumable"
    with pytest.raises(ValueError, match=r"flite voices \['slt'\] are not installed"):
        tiny(flite_voices=["slt"], flite_share=0.5)

    _, _, spoken = speak(Rendition("mumble.", "mumble", "flite-kal", 160, 40, None))
    assert spoken.voice == "en-US" and spoken.pitch_range == 50, "a failing flite call"
    folder = tiny(flite_voices=["awb"], flite_share=1.0).build(tmp_path / "corpus", workers=2)
    assert set(voices_of(folder, "train").values()) == {"flite-awb"}
    assert not {v for v in voices_of(folder, "test").values() if v.startswith("flite")}
    assert len(read_manifest(folder / "train.csv")) == 11
    with pytest.raises(CorpusError, match=r"other settings \(flite_share\)"):
        tiny(flite_voices=["awb"], flite_share=0.5).build(folder)


def test_a_real_flite_voice_speaks_english():
    from keras_s2s.corpora.flite import flite_voices, synthesize_flite

    if "kal16" not in flite_voices():
        pytest.skip("needs Debian's flite")
    slow, rate = synthesize_flite("the red dog runs home", "kal16", words_per_minute=120)
    fast, _ = synthesize_flite("the red dog runs home", "kal16", words_per_minute=220)
    assert rate == 16000 and 0.6 < len(fast) / rate < len(slow) / rate < 4
    assert np.abs(slow).max() > 0.05


FAKE_FESTIVAL = """\
#!{python}
# festival as far as the corpus builder uses it: -b '(print (voice.list))', and -b SCRIPT of
# (voice_V), Duration_Stretch, int_lr_params and utt.save.wave lines, each spoken as a sine at
# target_f0_mean Hz lasting 0.5 s x Duration_Stretch ('mumble' stops the batch); logs each call
import math, os, re, struct, sys, wave
command = sys.argv[2]
calls = open(os.environ["FAKE_FESTIVAL_CALLS"], "a")
if command == "(print (voice.list))":
    calls.write("voice.list\\n")
    sys.exit(print("(kal_diphone rab_diphone)"))
stretch, f0 = 1.0, 105.0
for line in open(command).read().splitlines():
    if match := re.match(r"[(]Parameter.set 'Duration_Stretch ([0-9.]+)[)]", line):
        stretch = float(match[1])
    if match := re.search(r"target_f0_mean ([0-9]+)", line):
        f0 = float(match[1])
    if match := re.match(r'[(]utt.save.wave [(]SynthText "((?:[^"\\\\]|\\\\.)*)"[)] "([^"]+)"', line):
        text = re.sub(r"\\\\(.)", r"\\1", match[1])
        calls.write(f"said {{text}}\\n")
        if "mumble" in text:
            sys.exit("SIOD ERROR: cannot say that")
        rate, seconds = 16000, 0.5 * stretch
        with wave.open(match[2], "wb") as out:
            out.setnchannels(1); out.setsampwidth(2); out.setframerate(rate)
            out.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * f0 * i / rate)))
                                     for i in range(int(rate * seconds))))
"""


@pytest.fixture
def fake_festival(tmp_path, monkeypatch):
    """A `festival` command on PATH with the voices kal_diphone and rab_diphone; returns the file
    that lists its calls (`voice.list`, `said TEXT`)."""
    from keras_s2s.corpora import festival

    calls = tmp_path / "festival-calls.txt"
    monkeypatch.setenv("FAKE_FESTIVAL_CALLS", str(calls))
    for _ in _fake_command(
        tmp_path / "festival-bin", monkeypatch, "festival", FAKE_FESTIVAL, festival
    ):
        yield calls


def _pitch(samples, rate=16000):
    return np.argmax(np.abs(np.fft.rfft(samples))) * rate / len(samples)


def test_festival_speaks_many_sentences_in_one_process_at_the_drawn_rate_and_pitch(fake_festival):
    from keras_s2s.corpora.festival import FestivalError, festival_voices, synthesize_festival

    assert festival_voices() == ["kal_diphone", "rab_diphone"]
    said = 'he said "no" \\ twice'
    (slow, rate), (plain, _) = synthesize_festival(
        [(said, "rab_diphone", 90, 100), ("a red  dog", "kal_diphone", 180, 50)]
    )
    assert rate == 16000 and len(slow) == 16000 and len(plain) == 8000, (
        "half the rate: twice as long"
    )
    assert abs(_pitch(slow) - 210) <= 2 and abs(_pitch(plain) - 105) <= 3, "pitch 100: an octave up"
    calls = fake_festival.read_text().splitlines()
    assert calls == ["voice.list", f"said {said}", "said a red dog"], "one process, quotes kept"
    with pytest.raises(FestivalError, match="no voice 'ked_diphone'; it has kal_diphone, rab_"):
        synthesize_festival([("a red dog", "ked_diphone", 180, 50)])
    with pytest.raises(FestivalError, match="produced no audio for 'mumble'.*cannot say that"):
        synthesize_festival(
            [("a red dog", "kal_diphone", 180, 50), ("mumble", "kal_diphone", 180, 50)]
        )


def test_festival_voices_speak_their_share_of_training_sentences_one_process_a_shard(
    fake_festival, tmp_path
):
    from keras_s2s.corpora.english_speech import speak

    plan = tiny(festival_voices=["kal_diphone", "rab_diphone"], festival_share=0.5).plan()
    trained = [r.voice for r in plan["train"]]
    assert 2 <= sum(v.startswith("festival-") for v in trained) <= 9
    held_out = tiny().plan()
    assert plan["test"] == held_out["test"] and plan["valid"] == held_out["valid"]
    assert "festival_share" not in tiny().settings(), "corpora built before Festival stay resumable"
    with pytest.raises(ValueError, match=r"festival voices \['ked_diphone'\] are not installed"):
        tiny(festival_voices=["ked_diphone"], festival_share=0.5)
    _, _, spoken = speak(Rendition("mumble.", "mumble", "festival-kal_diphone", 160, 40, None))
    assert spoken.voice == "en-US" and spoken.pitch_range == 50, "a failing Festival call"

    mumbled = SENTENCES[:-1] + [("mumble on.", "mumble on")]
    corpus = tiny(festival_voices=["rab_diphone"], festival_share=1.0, sentences=mumbled)
    assert "mumble on" in {r.transcript for r in corpus.plan()["train"]}
    fake_festival.write_text("")
    folder = corpus.build(tmp_path / "corpus", workers=2)
    spoken = {row["transcript"]: row["voice"] for row in _shard_rows(folder, "train")}
    assert spoken.pop("mumble on") == "en-US", "the shard's batch failed: one at a time, then plain"
    assert set(spoken.values()) == {"festival-rab_diphone"} and len(spoken) == 10
    assert not {v for v in voices_of(folder, "test").values() if v.startswith("festival")}
    calls = fake_festival.read_text().splitlines()
    assert calls.count("said mumble on.") == 2, "in the shard's batch, then alone"


def test_real_festival_voices_speak_english():
    from keras_s2s.corpora.festival import festival_voices, synthesize_festival

    if not {"kal_diphone", "rab_diphone"} <= set(festival_voices()):
        pytest.skip("needs Debian's festival, festvox-kallpc16k and festvox-rablpc16k")
    said = 'the "red" dog runs home'
    (slow, rate), (fast, _) = synthesize_festival(
        [(said, "rab_diphone", 120, 50), (said, "kal_diphone", 220, 50)]
    )
    assert rate == 16000 and 0.6 < len(fast) / rate < len(slow) / rate < 4
    assert np.abs(slow).max() > 0.05


FAKE_RHVOICE = """\
#!{python}
# RHVoice-test as far as the corpus builder uses it: -p VOICE -r RATE% -t PITCH% -o WAV, the text on
# stdin (a sine at 1.2 x PITCH Hz lasting 0.5 s x 100 / RATE, at 24 kHz; 'mumble' fails)
import math, struct, sys, wave
args = sys.argv[1:]
option = lambda flag: args[args.index(flag) + 1]
if "mumble" in sys.stdin.read():
    sys.exit("RHVoice: cannot say that")
rate, seconds, f0 = 24000, 50 / float(option("-r")), 1.2 * float(option("-t"))
with wave.open(option("-o"), "wb") as out:
    out.setnchannels(1); out.setsampwidth(2); out.setframerate(rate)
    out.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * f0 * i / rate)))
                             for i in range(int(rate * seconds))))
"""


@pytest.fixture
def fake_rhvoice(tmp_path, monkeypatch):
    """An `RHVoice-test` command on PATH with the English voices clb and bdl (and a Russian one)."""
    from keras_s2s.corpora import rhvoice

    for voice, language in (("clb", "English"), ("bdl", "English"), ("anna", "Russian")):
        (tmp_path / "voices" / voice).mkdir(parents=True)
        info = f"name={voice.title()}\nlanguage={language}\ngender=female\n"
        (tmp_path / "voices" / voice / "voice.info").write_text(info)
    monkeypatch.setattr(rhvoice, "VOICES", tmp_path / "voices")
    yield from _fake_command(tmp_path / "bin", monkeypatch, "RHVoice-test", FAKE_RHVOICE, rhvoice)


def test_rhvoice_speaks_at_the_drawn_rate_and_pitch_and_refuses_a_voice_it_lacks(fake_rhvoice):
    from keras_s2s.corpora.rhvoice import RHVoiceError, rhvoice_voices, synthesize_rhvoice

    assert rhvoice_voices() == ["bdl", "clb"], "English voices only"
    samples, rate = synthesize_rhvoice("a red dog", "clb", words_per_minute=85, pitch=100)
    assert rate == 24000 and len(samples) == 24000, "half RHVoice's pace: twice as long"
    spectrum = np.abs(np.fft.rfft(samples))
    assert abs(np.argmax(spectrum) * rate / len(samples) - 240) <= 2, "pitch 100: 200%"
    samples, _ = synthesize_rhvoice("a red dog", "bdl", words_per_minute=170, pitch=50)
    assert len(samples) == 12000
    with pytest.raises(RHVoiceError, match="no English voice 'anna'; it has bdl, clb"):
        synthesize_rhvoice("a red dog", "anna")
    with pytest.raises(RHVoiceError, match="produced no audio for 'mumble'"):
        synthesize_rhvoice("mumble", "clb")


def test_rhvoice_voices_speak_their_share_of_training_sentences_only(fake_rhvoice, tmp_path):
    from keras_s2s.corpora.english_speech import speak

    plan = tiny(rhvoice_voices=["clb", "bdl"], rhvoice_share=0.5).plan()
    trained = [r.voice for r in plan["train"]]
    assert 2 <= sum(v.startswith("rhvoice-") for v in trained) <= 9
    assert not [r for r in plan["test"] + plan["valid"] if r.voice.startswith("rhvoice-")]
    mixed = tiny(rhvoice_voices=["clb"], rhvoice_share=0.5, flite_voices=[], flite_share=0.0)
    assert mixed.settings()["rhvoice_share"] == 0.5
    assert "rhvoice_share" not in tiny().settings(), "corpora built before RHVoice stay resumable"
    with pytest.raises(ValueError, match=r"rhvoice voices \['slt'\] are not installed"):
        tiny(rhvoice_voices=["slt"], rhvoice_share=0.5)
    with pytest.raises(ValueError, match=r"festival_share \+ rhvoice_share must be at most 1"):
        tiny(rhvoice_voices=["clb"], rhvoice_share=0.6, festival_share=0.6,
             festival_voices=["kal_diphone"])  # fmt: skip
    _, _, spoken = speak(Rendition("mumble.", "mumble", "rhvoice-clb", 160, 40, None))
    assert spoken.voice == "en-US" and spoken.pitch_range == 50, "a failing RHVoice call"
    folder = tiny(rhvoice_voices=["bdl"], rhvoice_share=1.0).build(tmp_path / "corpus", workers=2)
    assert set(voices_of(folder, "train").values()) == {"rhvoice-bdl"}
    assert read_audio(folder / read_manifest(folder / "train.csv")[0].path, 16000).size > 0


def test_real_rhvoice_voices_speak_english():
    from keras_s2s.corpora.rhvoice import rhvoice_voices, synthesize_rhvoice

    if not {"clb", "bdl"} <= set(rhvoice_voices()):
        pytest.skip("needs Debian's rhvoice and rhvoice-english (non-free)")
    slow, rate = synthesize_rhvoice("the red dog runs home", "clb", words_per_minute=120)
    fast, _ = synthesize_rhvoice("the red dog runs home", "bdl", words_per_minute=220)
    assert rate == 24000 and 0.6 < len(fast) / rate < len(slow) / rate < 4
    assert np.abs(slow).max() > 0.05


def _shard_rows(folder, split):
    return [
        row
        for shard in sorted((folder / "shards").glob(f"{split}-*/shard.csv"))
        for row in csv.DictReader(open(shard, newline="", encoding="utf-8"))
    ]


FULL_DISK = """\
import shutil, soundfile

_write, _usage = soundfile.write, shutil.disk_usage


def write(file, *args, **kwargs):  # the second training shard meets a full disk
    if "train-00001" in str(file) and file.endswith("00002.flac"):
        shutil.disk_usage = lambda path: _usage(path)._replace(free=4096)
        raise soundfile.LibsndfileError(2)  # what libsndfile says then: "System error."
    return _write(file, *args, **kwargs)


soundfile.write = write
"""


def test_a_full_disk_stops_the_corpus_with_one_clear_error_and_the_same_command_resumes(
    tmp_path, monkeypatch, capfd
):
    from keras_s2s.cli import main

    (tmp_path / "faults" / "sitecustomize.py").parent.mkdir()
    (tmp_path / "faults" / "sitecustomize.py").write_text(FULL_DISK)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path / "faults"), *sys.path]))
    text = tmp_path / "story.txt"
    text.write_text(" ".join(f"The {a} dog sees a {b} cat." for a in WORDS for b in WORDS[:3]))
    out = tmp_path / "corpus"
    args = ["speech-corpus", "--text", str(text), "--out", str(out), "--num-valid", "2",
            "--num-test", "2", "--shard-size", "4", "--workers", "2"]  # fmt: skip
    assert main(args) == 1
    error = capfd.readouterr().err
    assert "Traceback" not in error and "System error" not in error
    assert error.count("keras-s2s: error:") == 1
    assert "No space left on device" in error and "train-00001" in error
    assert "the same command continues from there" in error
    assert (out / "shards" / "train-00000" / "shard.csv").is_file(), "finished shards stay"
    assert not (out / "shards" / "train-00001").exists()
    monkeypatch.delenv("PYTHONPATH")
    assert main(args) == 0
    assert len(read_manifest(out / "train.csv")) == 20


def test_a_damaged_corpus_record_is_named_with_what_to_do(tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "corpus.json").write_text('{"seed": 0')  # truncated
    with pytest.raises(CorpusError, match=r"corpus.json: damaged \(Expecting .*delete the folder"):
        tiny().build(folder)
    (folder / "corpus.json").write_bytes(b"\xff\xfe[]")
    with pytest.raises(
        CorpusError, match=r"corpus.json: damaged \(line 1: bytes that are not UTF-8"
    ):
        tiny().build(folder)
    (folder / "corpus.json").write_text("[1, 2]")
    with pytest.raises(CorpusError, match=r"corpus.json: damaged \(not a JSON object\)"):
        tiny().build(folder)
