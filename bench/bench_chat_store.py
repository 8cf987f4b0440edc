"""How long saving a conversation takes after each turn (issue 16): `ChatStore.save` runs on the
language server's event loop, so its time is time no other request is answered.

The conversation is shaped like a real one: each answer's record holds the exact payload sent
(a 30 kB user message, 75 context pieces of ~400 characters), so the file grows ~110 kB a turn.
Random text from a fixed seed; the folder is a temporary one.

    .venv/bin/python bench/bench_chat_store.py [--turns 6] [--rounds 3]

Prints save time per turn (median over rounds) and writes bench/results/chat-store-<time>.json.
"""

from __future__ import annotations

import argparse
import random
import statistics
import string
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import machine, table, write_results  # noqa: E402

from codectx.app.chat_model import Citation, Turn  # noqa: E402
from codectx.app.chat_store import ChatStore  # noqa: E402

PIECES = 75


def one_round(turns: int, seed: int) -> tuple[list[float], int]:
    rng = random.Random(seed)
    alphabet = string.ascii_letters + "  \n_()"

    def text(n: int) -> str:
        return "".join(rng.choices(alphabet, k=n))

    def record() -> dict[str, Any]:
        pieces = [
            {
                "path": f"pkg/mod{i}.py",
                "startLine": i,
                "endLine": i + 20,
                "symbol": f"f{i}",
                "text": text(400),
            }
            for i in range(PIECES)
        ]
        messages = [{"role": "system", "content": text(2000)}, {"role": "user", "content": text(30000)}]
        return {"request": {"messages": messages}, "pieces": pieces, "budget": 6144}

    store = ChatStore(Path(tempfile.mkdtemp(prefix="codectx-bench-")))
    conv = store.create("bench")
    times = []
    for n in range(1, turns + 1):
        cites = [Citation(f"pkg/mod{i}.py", i, i + 20, "search") for i in range(PIECES)]
        conv.turns.append(Turn(f"u{n}", "user", "a question", sent=text(30000)))
        conv.turns.append(
            Turn(f"a{n}", "assistant", "an answer", citations=cites, sent=text(2000), record=record())
        )
        t = time.perf_counter()
        store.save(conv)
        times.append((time.perf_counter() - t) * 1000)
    size = (store.folder / f"{conv.conversation_id}.json").stat().st_size
    if ChatStore(store.folder).get(conv.conversation_id) != conv:
        raise SystemExit("the saved conversation does not read back equal")
    return times, size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--turns", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    rounds = [one_round(args.turns, seed) for seed in range(args.rounds)]
    per_turn = [statistics.median(r[0][i] for r in rounds) for i in range(args.turns)]
    size = rounds[0][1]
    rows = [(f"save after turn {i + 1}", f"{ms:.1f} ms") for i, ms in enumerate(per_turn)]
    rows.append(("file after the last turn", f"{size / 1e6:.2f} MB"))
    print(table(rows, ("metric", "median")))
    out = write_results(
        "chat-store", {"machine": machine(), "save_ms": per_turn, "file_bytes": size, "args": vars(args)}
    )
    print(f"\nwrote {out}")


if __name__ == "__main__":
    main()
