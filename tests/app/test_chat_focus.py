"""chat_focus: the window of a long search hit that a chat turn sends (pure functions)."""

from __future__ import annotations

from codectx.app.chat_focus import focus, terms

CLASS_CHUNK = """class IndexedSet(MutableSet):
    def __init__(self, other=None):
        self.item_index_map = dict()
        self.item_list = []
        self.dead_indices = []
    def add(self, item):
        if item not in self.item_index_map:
            self.item_index_map[item] = len(self.item_list)
            self.item_list.append(item)
    def discard(self, item):
        try:
            self.remove(item)
        except KeyError:
            pass
    def complement(self):
        return _ComplementSet(excluded=self)
    def iter_slice(self, start, stop):
        return iter(self.item_list[start:stop])"""


def test_terms_are_the_questions_content_words_stemmed() -> None:
    assert terms("Convert the current set to its complement in-place") == [
        "conve",
        "curre",
        "compleme",
        "place",
    ]
    assert terms("How does it work?") == ["work"]
    assert terms("") == []


def test_the_window_holds_the_method_the_question_names() -> None:
    lines = CLASS_CHUNK.split("\n")
    first, last = focus(lines, 120, terms("return the complement of this set"))
    shown = "\n".join(lines[first : last + 1])
    assert "def complement(self):" in shown and "_ComplementSet" in shown
    assert len(shown) <= 120
    assert first > 0  # not the head: the class line and __init__ say nothing about it


def test_the_head_stays_when_no_later_window_names_more() -> None:
    lines = CLASS_CHUNK.split("\n")
    assert focus(lines, 120, terms("what does the weather look like"))[0] == 0
    assert focus(lines, 120, [])[0] == 0
    # A window that fits everything is the whole chunk.
    assert focus(lines, 10_000, terms("complement")) == (0, len(lines) - 1)


def test_one_line_longer_than_the_window_is_still_a_window() -> None:
    assert focus(["x" * 500], 100, ["xx"]) == (0, 0)
    assert focus([], 100, ["a"]) == (0, 0)
