"""Draws the extension's icon (images/icon.png, 128x128): braces around a cursor on a rounded square.

Pure numpy + zlib, so it needs nothing beyond the project's own environment:
    .venv/bin/python vscode-extension/scripts/icon.py
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np

SIZE = 128
SS = 4  # supersampling for smooth edges


def _png(rgba: np.ndarray) -> bytes:
    h, w, _ = rgba.shape
    raw = b"".join(b"\x00" + rgba[y].tobytes() for y in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def _segment(px: np.ndarray, py: np.ndarray, a: tuple[float, float], b: tuple[float, float]) -> np.ndarray:
    """Distance from each pixel to the segment a-b."""
    ax, ay = a
    bx, by = b
    dx, dy = bx - ax, by - ay
    t = np.clip(((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy), 0, 1)
    return np.hypot(px - (ax + t * dx), py - (ay + t * dy))


def draw() -> np.ndarray:
    n = SIZE * SS
    ys, xs = np.mgrid[0:n, 0:n].astype(np.float64) / SS + 0.5 / SS
    # Rounded square background with a diagonal blue gradient.
    r, lo, hi = 24.0, 4.0, SIZE - 4.0
    cx = np.clip(xs, lo + r, hi - r)
    cy = np.clip(ys, lo + r, hi - r)
    inside = np.hypot(xs - cx, ys - cy) <= r
    t = (xs + ys) / (2 * SIZE)
    top, bottom = np.array([37, 99, 235]), np.array([30, 41, 99])
    rgb = (top[None, None, :] * (1 - t[..., None]) + bottom[None, None, :] * t[..., None]).astype(np.float64)
    alpha = inside.astype(np.float64)
    # White braces: each brace is four strokes meeting at a point in the middle.
    stroke = np.full(xs.shape, np.inf)
    for sign, x0 in ((1, 40.0), (-1, 88.0)):
        tip = x0 - sign * 12
        pts = [(x0 + sign * 8, 30), (x0, 38), (x0, 56), (tip, 64), (x0, 72), (x0, 90), (x0 + sign * 8, 98)]
        for a, b in zip(pts, pts[1:], strict=False):
            stroke = np.minimum(stroke, _segment(xs, ys, a, b))
    braces = stroke <= 5.0
    # The cursor: a warm bar between the braces.
    cursor = (np.abs(xs - 64) <= 4) & (np.abs(ys - 64) <= 20)
    rgb[braces] = (255, 255, 255)
    rgb[cursor] = (251, 191, 36)
    out = np.concatenate([rgb, alpha[..., None] * 255], axis=-1)
    out = out.reshape(SIZE, SS, SIZE, SS, 4).mean(axis=(1, 3))
    return np.clip(np.round(out), 0, 255).astype(np.uint8)


if __name__ == "__main__":
    target = Path(__file__).resolve().parent.parent / "images" / "icon.png"
    target.write_bytes(_png(draw()))
    print(target)
