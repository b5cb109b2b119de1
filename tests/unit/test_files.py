"""theory.files: text read plain or gzip-compressed, with errors that name the file."""

import gzip

import pytest

from theory.files import plain_or_gz, read_json, read_text


def test_a_gzip_file_reads_as_its_text(tmp_path):
    text = '{"kind": "train", "step": 10, "note": "γ(0)"}\n'
    (tmp_path / "m.jsonl.gz").write_bytes(gzip.compress(text.encode(), mtime=0))
    assert read_text(tmp_path / "m.jsonl.gz") == text
    (tmp_path / "c.json.gz").write_bytes(gzip.compress(b'{"a": 1}'))
    assert read_json(tmp_path / "c.json.gz") == {"a": 1}


def test_the_plain_file_is_read_first_and_the_gz_copy_only_without_it(tmp_path):
    plain, gz = tmp_path / "metrics.jsonl", tmp_path / "metrics.jsonl.gz"
    # neither exists: the plain name, for the caller's "no such file" error
    assert plain_or_gz(plain) == plain
    gz.write_bytes(gzip.compress(b"compressed\n"))
    assert plain_or_gz(plain) == gz and plain_or_gz(str(plain)) == gz
    plain.write_text("plain\n")
    assert plain_or_gz(plain) == plain


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: gzip.compress(b"step 10\n" * 100)[:-6], "not a whole gzip file"),  # cut short
        (lambda: b"plain text, named .gz\n", "not a whole gzip file"),
        (lambda: gzip.compress(b"\xff\xfe\x00a"), "NUL bytes"),  # decompressed, then read as text
    ],
)
def test_a_broken_gz_file_is_a_value_error_naming_it(tmp_path, make, words):
    path = tmp_path / "metrics.jsonl.gz"
    path.write_bytes(make())
    with pytest.raises(ValueError, match=words) as err:
        read_text(path, "metrics log")
    assert str(path) in str(err.value)
