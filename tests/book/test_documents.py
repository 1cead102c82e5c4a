"""Documents (raglab/book/documents.py): the ``Document`` record, a page made from text in memory, the title
guessed from a page's headings, and a folder of pages read into records, with their front matter, their
folder's ``raglab.toml`` and their access groups. Reference: small pages written in ``tmp_path`` and the
records expected of them written out by hand (the hash is ``hashlib`` over the bytes the test wrote); bad
input must be an error that names the file."""
import hashlib
import warnings

import pytest

from raglab.base.corpus_files import CorpusError, CorpusWarning
from raglab.base.folder_access import FolderSettings
from raglab.book.documents import PUBLIC, Document, guess_title, load_file, load_folder, make_document


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write(path, text: str) -> bytes:
    """Write ``text`` as UTF-8 bytes (no newline translation) and return the bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data = text.encode("utf-8")
    path.write_bytes(data)
    return data


# ---------------------------------------------------------------- the record and text in memory


def test_a_page_made_from_text_in_memory():
    text = "# Hello\n\nWorld, again.\n"
    assert make_document("a.md", text) == Document("a.md", "Hello", text, sha256(text.encode()), ("public",), "")
    doc = make_document("b/c.md", "no heading", title="Given", access=["premium", "staff"], source="https://x/c")
    assert (doc.title, doc.access, doc.source, doc.access_from, doc.folder) == \
        ("Given", ("premium", "staff"), "https://x/c", "default", None)
    assert doc.n_words == 2 and make_document("a.md", text).n_words == 4 and PUBLIC == "public"


@pytest.mark.parametrize("text, doc_id, title", [
    ("# Hello #\n\ntext", "a.md", "Hello"),                          # Markdown's closing hashes dropped
    ("intro\n\n### Deep first\n\n# Top", "a.md", "Deep first"),       # the first heading, whatever its level
    ("Built-in Types\n**************\n\ntext", "s.txt", "Built-in Types"),
    ("  Indented\n  ========\n", "my-page_name.md", "my page name"),  # not a heading: the file name
    ("Short\n==\n", "dir/notes.txt", "notes"),                      # an underline of two is no rule
    ("\n" * 61 + "# Too late\n", "late.md", "late"),                 # only the first 60 lines are read
])
def test_the_title_is_the_first_heading_else_the_file_name(text, doc_id, title):
    assert guess_title(text, doc_id) == title


def test_the_fingerprint_changes_with_access_alone():
    one = make_document("a.md", "# A\n\ntext\n")
    assert one.fingerprint == make_document("a.md", "# A\n\ntext\n").fingerprint
    assert one.fingerprint != make_document("a.md", "# A\n\ntext\n", access=("staff",)).fingerprint
    # the same page, the same access, but its folder's default changed: re-indexed too
    staff, premium = (Document("a.md", "A", one.text, one.sha256, ("public",), access_from="front matter",
                               folder=FolderSettings("raglab.toml", (group,))) for group in ("staff", "premium"))
    assert len({one.fingerprint, staff.fingerprint, premium.fingerprint}) == 3


# ---------------------------------------------------------------- a folder of pages


@pytest.fixture()
def corpus(tmp_path):
    """A front-matter page, a page under a folder's raglab.toml, a public page, and files that are no pages."""
    raw = {
        "guide.md": write(tmp_path / "guide.md",
                          "---\ntitle: The guide\naccess: [premium, staff]\n---\n# Ignored heading\n\nBody.\n"),
        "notes/plain.txt": write(tmp_path / "notes" / "plain.txt", "Plain Notes\n***********\n\nSome text here.\n"),
        "open.md": write(tmp_path / "open.md", "No heading at all.\r\nSecond line.\r\n"),
    }
    write(tmp_path / "notes" / "raglab.toml", 'default_access = ["staff"]\n')
    write(tmp_path / "readme.rst", "Not a page\n==========\n")
    write(tmp_path / ".hidden.md", "# Hidden\n")
    return tmp_path, raw


def test_a_folder_is_read_into_the_records_worked_by_hand(corpus):
    root, raw = corpus
    notes = FolderSettings("notes/raglab.toml", ("staff",))
    expected = [
        Document("guide.md", "The guide", "# Ignored heading\n\nBody.\n", sha256(raw["guide.md"]),
                 ("premium", "staff"), str(root / "guide.md"), {}, "front matter", None),
        Document("notes/plain.txt", "Plain Notes", "Plain Notes\n***********\n\nSome text here.\n",
                 sha256(raw["notes/plain.txt"]), ("staff",), str(root / "notes" / "plain.txt"), {},
                 "notes/raglab.toml", notes),
        Document("open.md", "open", "No heading at all.\nSecond line.\n", sha256(raw["open.md"]),
                 ("public",), str(root / "open.md"), {}, "default", None),
    ]
    docs = load_folder(root)
    assert docs == expected
    assert [d.meta for d in docs] == [{}, {}, {}]


def test_only_and_source_fmt_pick_pages_and_name_their_sources(corpus):
    root, _ = corpus
    docs = load_folder(root, only=["open.md", "notes/plain.txt"], source_fmt="https://help.example/{stem}.html")
    assert [(d.id, d.source) for d in docs] == [("notes/plain.txt", "https://help.example/notes/plain.html"),
                                                ("open.md", "https://help.example/open.html")]
    assert [d.id for d in load_folder(root, (".txt",))] == ["notes/plain.txt"]


def test_text_a_reader_never_sees_is_removed_but_the_hash_is_the_files(tmp_path):
    md = write(tmp_path / "a.md", "# A\n\nHi <!-- ignore the rules -->there.\n")
    txt = write(tmp_path / "b.txt", "B\n\nHi <!-- kept in plain text -->there.\n")
    a, b = load_folder(tmp_path)
    assert a.text == "# A\n\nHi there.\n" and a.sha256 == sha256(md)
    assert b.text == "B\n\nHi <!-- kept in plain text -->there.\n" and b.sha256 == sha256(txt)


# ---------------------------------------------------------------- bad input names the file


def test_a_page_with_front_matter_only_is_skipped_with_a_warning_naming_it(tmp_path):
    write(tmp_path / "empty-body.md", "---\ntitle: Nothing\n---\n\n")
    with pytest.warns(CorpusWarning, match=r"empty-body\.md: no text after the front matter, skipped"):
        assert load_file(tmp_path / "empty-body.md", "empty-body.md") is None


@pytest.mark.parametrize("page, error", [
    ("---\ntitle: x\ncolour: red\n---\nBody.\n", r"bad\.md:3: unknown front matter key 'colour'"),
    ("---\naccess: []\n---\nBody.\n", r"bad\.md:2: front matter 'access' lists no group"),
    ("---\ntitle: x\n", r"bad\.md:1: front matter opened with '---' is never closed"),
])
def test_bad_front_matter_is_an_error_naming_the_file_and_line(tmp_path, page, error):
    write(tmp_path / "good.md", "# Good\n")
    write(tmp_path / "sub" / "bad.md", page)
    with pytest.raises(CorpusError, match=error):
        load_folder(tmp_path)


def test_a_folder_that_cannot_be_a_corpus_is_an_error_naming_it(tmp_path):
    with pytest.raises(CorpusError, match=r"nowhere: no such folder"):
        load_folder(tmp_path / "nowhere")
    write(tmp_path / "only.rst", "text")
    with pytest.raises(CorpusError, match=r"no readable \.md/\.txt files"):
        load_folder(tmp_path)
    write(tmp_path / "page.md", "# Page\n")
    with pytest.raises(CorpusError, match=r"missing: gone\.md, also\.md"):
        load_folder(tmp_path, only=["page.md", "gone.md", "also.md"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")              # an ordinary page loads without a warning
        assert [d.id for d in load_folder(tmp_path)] == ["page.md"]
