"""The name-words list: definitions whose names a prose query's words make (retriever/namewords.py),
alone on a hand-made symbol table and through HybridSearcher on a real index (LanceDB, tree-sitter)."""

from __future__ import annotations

from pathlib import Path

from codectx.indexer.model import Definition
from codectx.indexer.pipeline import index_workspace
from codectx.indexer.storage.store import IndexStore
from codectx.retriever.namewords import NameWords, query_words
from codectx.retriever.search import HybridSearcher

from codectx.settings import Settings, load_settings
from tests.support.workspace import write_workspace


def table(*names: str, copies: int = 1) -> dict[str, list[Definition]]:
    return {
        n: [
            Definition(n.rsplit(".", 1)[-1], n, "function", f"m{i}.py", "python", 0, 1) for i in range(copies)
        ]
        for n in names
    }


def ranked(index: NameWords, query: str) -> list[str]:
    return [h.name for h in index.search(query, 10)]


def test_a_name_the_query_spells_out_ranks_over_one_that_shares_a_word() -> None:
    index = NameWords(table("merge_cookies", "cookie_jar_size", "cookies", "jar"))
    # `cookies` is a plural of the name word `cookie`; `merge_cookies` is spelled out entirely.
    assert ranked(index, "Merge the cookies into the jar")[0] == "merge_cookies"


def test_stems_and_abbreviations_match_and_abbreviations_count_less() -> None:
    index = NameWords(table("dict_from_cookiejar", "parse_header", "list_from_cookiejar"))
    assert ranked(index, "Returns a dictionary from a cookiejar")[0] == "dict_from_cookiejar"
    assert ranked(index, "The header parsed")[0] == "parse_header"
    abbreviated = NameWords(table("mod_value", "model_value"))
    assert ranked(abbreviated, "the model value") == ["model_value", "mod_value"]


def test_a_name_word_the_query_spells_in_pieces_matches() -> None:
    index = NameWords(
        table("Arrow.weekday", "Arrow.utcoffset", "Arrow.dst", "Arrow.dt", "Arrow.week_number", "day_name")
    )
    # Two words run together, in either order, the first possibly a grammar word.
    assert ranked(index, "Returns the day of the week as an integer")[0] == "Arrow.weekday"
    assert ranked(index, "the UTC offset of this time")[0] == "Arrow.utcoffset"
    # The initials of three words in a row, counted as an abbreviation (half).
    assert ranked(index, "Returns the daylight savings time adjustment")[0] == "Arrow.dst"
    # Two initials are too often chance: "the day time" does not spell `dt`.
    assert "Arrow.dt" not in ranked(index, "the day time")


def test_common_words_say_less_than_rare_ones() -> None:
    names = [f"get_{w}" for w in ("alpha", "beta", "gamma", "delta")] + ["render_widget"]
    index = NameWords(table(*names, copies=3))
    assert ranked(index, "get the widget")[0] == "render_widget"


def test_stopwords_alone_find_nothing_and_qualnames_add_class_words() -> None:
    index = NameWords(table("is_in", "Session.send", "send"))
    assert query_words("is it in the of") == []
    assert ranked(index, "is it in the of") == []
    assert ranked(index, "send on the session")[0] == "Session.send"


FILES = {
    "shop/basket.py": (
        "def total_basket_price(items):\n    s = 0\n    for i in items:\n        s += i.p\n    return s\n"
    ),
    "shop/tax.py": "def apply_tax(amount, rate):\n    return amount * (1 + rate)\n",
}


def settings_for(root: Path, **values: object) -> Settings:
    return load_settings(root, {"index.index_dir": str(root / ".codectx"), **values}, environ={})


def test_search_fuses_the_names_list_for_prose_queries_only(tmp_path: Path) -> None:
    root = write_workspace(tmp_path / "ws", FILES)
    settings = settings_for(root, **{"index.embed": False})  # the default weight fuses the list
    index_workspace(root, settings)
    store = IndexStore.open(root / ".codectx")
    searcher = HybridSearcher(store, settings)
    # The body never says "basket" or "price" beyond the name: the names list finds it.
    found = searcher.search("the price of a basket", k=2)
    assert found.results[0].symbol == "total_basket_price"
    assert "names" in found.results[0].sources
    assert "names" not in searcher.ranked_lists("total_basket_price", 10)[0]  # an identifier query
    off = HybridSearcher(
        store, settings_for(root, **{"index.embed": False, "retriever.name_words_weight": 0})
    )
    assert "names" not in off.ranked_lists("the price of a basket", 10)[0]  # weight 0: not asked
