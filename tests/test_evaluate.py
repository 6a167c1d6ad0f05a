import json
import math
import sys
import warnings

import pytest

from dasher_rnn.adapt.compose import WriterConfig, build_writer
from dasher_rnn.alphabet import Alphabet, SymbolGroup
from dasher_rnn.cli import main
from dasher_rnn.evaluate import evaluate_files, score_language_model
from dasher_rnn.lm.ppm import PPMModel

AB = Alphabet("ab", (SymbolGroup("letters", "#fff", "ab "),))


class Uniform:
    """A model that is always uniform and records what it was asked to learn."""

    alphabet = AB

    def __init__(self):
        self.learned, self.resets = [], 0

    def reset(self):
        self.resets += 1

    def probs(self):
        import numpy as np

        return np.full(len(AB), 1 / len(AB))

    def dasher_distribution(self, floor=0.05):
        from dasher_rnn.lm.protocol import quantise

        return quantise(self.probs(), floor)

    def advance(self, symbol):
        pass

    def cut(self):
        pass

    def learn(self, symbol):
        self.learned.append(symbol)

    def fork(self):
        return self


def test_protocol_resets_per_message_skips_unknown_and_learns_only_when_adaptive():
    model = Uniform()
    score = score_language_model(model, ["ab", "", "a?b"], floor=0, adaptive=False)
    assert model.resets == 2 and model.learned == []
    assert score.chars == 5 and score.skipped == 1 and score.messages == 2
    assert score.skipped_chars == {"?": 1}
    assert score.bits == pytest.approx(4 * math.log2(3))
    assert score.start_bits[1] == [pytest.approx(math.log2(3))] * 2
    assert score.start_bits[5] == []
    score_language_model(model, ["ab", "b"], floor=0, adaptive=True)
    assert model.learned == [0, 1, 1]


def test_each_file_starts_from_the_trained_model(tmp_path):
    f1, f2 = tmp_path / "one.txt", tmp_path / "two.txt"
    f1.write_text("abab\nbaba\n")
    f2.write_text("abab\nbaba\n")
    model = PPMModel(AB, default_context="")
    model.train_text("ab ba")
    report = evaluate_files(lambda: build_writer(WriterConfig(model="ppm"), trained_ppm=model), [f1, f2], adaptive=True)
    assert report["files"]["one"] == report["files"]["two"]
    assert report["overall"]["chars"] == 16
    assert report["overall"]["bits"] == pytest.approx(2 * report["files"]["one"]["bits"], abs=0.2)


def test_eval_command_prints_json(tmp_path, capsys):
    train = tmp_path / "train.txt"
    train.write_text("hello there. how are you?\n" * 20)
    phrases = tmp_path / "phrases.txt"
    phrases.write_text("hello you\nhow are you there\n")
    assert main(["eval", "--model", "ppm", "--alphabet", "english-limited", "--train", str(train), str(phrases), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["settings"]["adaptive"] is True
    assert 0 < report["overall"]["bits_per_char"] < 3
    assert report["files"]["phrases"]["chars"] == len("hello you") + len("how are you there")


def test_eval_command_reports_bad_files_without_traceback(tmp_path, capsys):
    binary = tmp_path / "image.bin"
    binary.write_bytes(b"\x89PNG\x00\x00\x01")
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("caf\xe9\n".encode("latin-1"))
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    assert main(["eval", "--model", "ppm", str(binary)]) == 2
    assert "image.bin: looks like a binary file (NUL byte at offset 4; 3 control bytes in 7)" in capsys.readouterr().err
    assert main(["eval", "--model", "ppm", str(latin1)]) == 2
    assert "latin1.txt: not valid UTF-8 at byte offset 3" in capsys.readouterr().err
    with pytest.warns(UserWarning, match="1 undecodable"):
        assert main(["eval", "--model", "ppm", "--replace-errors", str(latin1), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["overall"]["skipped"] == 1
    assert main(["eval", "--model", "ppm", str(empty), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["overall"]["chars"] == 0
    assert main(["eval", "--model", "ppm", str(tmp_path / "missing.txt")]) == 2
    assert "missing.txt" in capsys.readouterr().err


def test_stray_control_bytes_in_training_text_are_dropped_with_one_notice(tmp_path, capsys):
    """Dasher 5's Finnish text has two NULs and Dasher reads it: so does --train, saying once what it dropped."""
    train = tmp_path / "train.txt"
    text = "hello there. how are you?\n" * 40
    train.write_bytes(text[:100].encode() + b"\x00" + text[100:300].encode() + b"\x00\x1b" + text[300:].encode())
    phrases = tmp_path / "phrases.txt"
    phrases.write_text("hello you\nhow are you there\n")
    args = ["eval", "--model", "ppm", "--alphabet", "english-limited", "--train", str(train), str(phrases), "--json"]
    with warnings.catch_warnings():  # shown as a run shows it (pytest records warnings instead)
        warnings.showwarning = lambda message, category, filename, lineno, file=None, line=None: sys.stderr.write(
            warnings.formatwarning(message, category, filename, lineno, line))
        assert main(args) == 0
    captured = capsys.readouterr()
    clean = tmp_path / "clean.txt"
    clean.write_text(text)
    assert main([*args[:6], str(clean), *args[7:]]) == 0
    assert json.loads(captured.out)["overall"] == json.loads(capsys.readouterr().out)["overall"]  # as if never there
    notices = [line for line in captured.err.splitlines() if "dropped" in line]
    assert notices == [f"dasher-rnn eval: notice: {train}: 3 control bytes dropped, the first a NUL byte at offset 100"]


def test_binary_files_are_still_refused(tmp_path):
    from dasher_rnn.textio import TextFileError, TextNotice, read_text

    many = tmp_path / "many.txt"  # more than 1 in 100 bytes a control byte: binary
    many.write_bytes(b"".join(b"word\x00" * 3 + b"more words here " * 2 for _ in range(50)))
    with pytest.raises(TextFileError, match="many.txt: looks like a binary file .NUL byte at offset 4; 150 control"):
        read_text(many)
    utf16 = tmp_path / "utf16.txt"
    utf16.write_text("hello there\n" * 10, encoding="utf-16")
    with pytest.raises(TextFileError, match="UTF-16. re-encode it as UTF-8"):
        read_text(utf16)
    few = tmp_path / "few.txt"  # one stray byte in a short text, and form feeds (whitespace, kept)
    few.write_bytes(b"page one\x0c\npage\x7f two")
    with pytest.warns(TextNotice, match="1 control byte dropped, the first a control byte 0x7f at offset 14"):
        assert read_text(few) == "page one\x0c\npage two"


def test_overlong_line_is_scored(tmp_path):
    long_line = tmp_path / "long.txt"
    long_line.write_text("ab " * 10_000)
    model = PPMModel(AB, default_context="")
    model.train_text("ab ba")
    report = evaluate_files(lambda: build_writer(WriterConfig(model="ppm"), trained_ppm=model), [long_line], adaptive=False)
    assert report["overall"]["chars"] == 30_000


class Skewed(Uniform):
    """Always the same distribution over 'a', 'b', ' ': 0.5, 0.3, 0.2."""

    def probs(self):
        import numpy as np

        return np.array([0.5, 0.3, 0.2])


def test_symbols_renormalise_the_distribution_over_the_set():
    score = score_language_model(Skewed(), ["ab", "a b"], floor=0, symbols="ab")
    # over {a, b}: a 0.5/0.8, b 0.3/0.8; the space is outside the set: entered, skipped, counted
    assert score.bits == pytest.approx(-2 * math.log2(0.5 / 0.8) - 2 * math.log2(0.3 / 0.8))
    assert score.chars == 5 and score.skipped == 1 and score.skipped_chars == {" ": 1}
    full = score_language_model(Skewed(), ["ab"], floor=0)
    assert full.bits == pytest.approx(-math.log2(0.5) - math.log2(0.3))
    with pytest.raises(ValueError, match="not in the model's alphabet"):
        score_language_model(Skewed(), ["ab"], floor=0, symbols="abc")


def test_peer_symbols_on_the_rnn_sum_to_one_over_the_set(tiny_model_dir, tmp_path):
    from dasher_rnn.evaluate import SYMBOL_SETS, score_messages

    writer = build_writer(WriterConfig(model="rnn", model_dir=tiny_model_dir, adapt=False))
    line = "i want some water"
    peer = score_messages(writer, [line], floor=0, symbols="peer")
    full = score_messages(writer, [line], floor=0)
    writer.close()
    assert peer.skipped == 0 and peer.chars == len(line)
    assert peer.bits < full.bits  # mass outside the set (capitals, punctuation) is given back to it
    assert len(SYMBOL_SETS["peer"]) == 28
    path = tmp_path / "letter.txt"
    path.write_text(line + "\n")
    assert main(["eval", "--model-dir", str(tiny_model_dir), "--static", "--floor", "0", "--symbols", "peer",
                 "--json", str(path)]) == 0


CASED = Alphabet("ab-cased", (SymbolGroup("letters", "#fff", "abA "),))


class Cased(Uniform):
    """A fixed distribution over 'a', 'b', 'A', ' ' (the context does not matter)."""

    alphabet = CASED

    def __init__(self, probs=(0.4, 0.2, 0.1, 0.3)):
        super().__init__()
        self.p = probs

    def probs(self):
        import numpy as np

        return np.array(self.p)


def test_fold_case_sums_both_cases_of_a_letter():
    import numpy as np

    from dasher_rnn.evaluate import symbol_groups

    strict = score_language_model(Cased(), ["Ab a"], floor=0, symbols="ab ")
    folded = score_language_model(Cased(), ["Ab a"], floor=0, symbols="ab ", fold_case=True)
    # strict: 'A' is outside the set (skipped), the rest over a+b+space = 0.9; folded: 'A' scored as 'a', 0.4 + 0.1
    assert strict.skipped == 1 and folded.skipped == 0 and strict.chars == folded.chars == 4
    assert strict.bits == pytest.approx(-math.log2(0.2 / 0.9) - math.log2(0.3 / 0.9) - math.log2(0.4 / 0.9))
    assert folded.bits == pytest.approx(-2 * math.log2(0.5) - math.log2(0.2) - math.log2(0.3))
    probs = Cased().probs()
    strict_mass = probs @ symbol_groups("ab ", CASED)
    folded_mass = probs @ symbol_groups("ab ", CASED, fold_case=True)
    assert np.all(folded_mass >= strict_mass) and strict_mass.sum() == pytest.approx(0.9)
    assert folded_mass.sum() == pytest.approx(1.0)
    # all lower case, capitals given no mass: folding changes nothing (the first letter, entered as 'A', scores as 'a')
    lower = ["ab a", "b ab"]
    no_capitals = (0.5, 0.3, 0.0, 0.2)
    assert (score_language_model(Cased(no_capitals), lower, floor=0, symbols="ab ", fold_case=True).bits
            == pytest.approx(score_language_model(Cased(no_capitals), lower, floor=0, symbols="ab ").bits))
    with pytest.raises(ValueError, match="needs a symbol set"):
        score_language_model(Cased(), ["ab"], floor=0, fold_case=True)


def test_fold_context_is_sentence_case_in_place():
    from dasher_rnn.lm.messages import fold_context

    english = Alphabet("en", (SymbolGroup("all", "#fff", "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ .?'\n"),))
    assert fold_context("i SAID. 'so? ok\nyes", english) == "I said. 'So? Ok\nYes"
    assert fold_context("i said", CASED) == "i said"  # no capital I in the alphabet: as written
    client = pytest.importorskip("dasher_rnn_client.bcipy")  # the adapter's own casing, where it is installed
    for text in ["i SAID. 'so? ok\nyes", "what did u do on saturday night", "(hi) there! \"quoted\" ok"]:
        both_cases = Alphabet("x", (SymbolGroup("all", "#fff", "".join(sorted(set(text.lower() + text.upper())))),))
        assert fold_context(text, both_cases) == client.sentence_case(text)


def test_fold_case_on_the_rnn_and_the_eval_command(tiny_model_dir, tmp_path, capsys):
    from dasher_rnn.evaluate import score_messages

    writer = build_writer(WriterConfig(model="rnn", model_dir=tiny_model_dir, adapt=False))
    mixed, lower = "I want Some water", "i want some water"
    scores = {(line, fold): score_messages(writer, [line], floor=0, symbols="peer", fold_case=fold)
              for line in (mixed, lower) for fold in (False, True)}
    writer.close()
    assert scores[mixed, False].skipped == 2 and scores[mixed, True].skipped == 0  # 'I' and 'S' scored as 'i', 's'
    assert scores[lower, False].skipped == scores[lower, True].skipped == 0
    assert scores[mixed, True].bits == pytest.approx(scores[lower, True].bits)  # the text's own case is discarded
    path = tmp_path / "letter.txt"
    path.write_text(mixed + "\n")
    assert main(["eval", "--model-dir", str(tiny_model_dir), "--static", "--floor", "0", "--symbols", "peer",
                 "--fold-case", "--json", str(path)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["settings"]["fold_case"] is True and report["overall"]["skipped"] == 0
    assert main(["eval", "--model-dir", str(tiny_model_dir), "--fold-case", str(path)]) == 2
    assert "--fold-case needs --symbols" in capsys.readouterr().err
