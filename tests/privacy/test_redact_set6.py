"""Shapes from the sixth independent set's tuned half (logs, HTTP captures, SQL, shell history,
network configs, notebooks), written again with our own values, and the look-alikes that must stay.
"""

from __future__ import annotations

import pytest

from codectx.privacy.redact import Redactor

KEY = b"test-key-test-key-test-key-test!"


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor(key=KEY)


KEPT = [
    # `wg show` prints public keys under `public key:` and `peer:`.
    (
        "docs/vpn/wg-show.txt",
        "interface: wg0\n  public key: Hq7fFgJ0Ydrv2Kf97caxNj+NIz1rquEQVYEU4cG9dV8=\n"
        "peer: 0Ku1lhLKtWkHyeKWo/CGzNVtZhLe1cYisye8IOM7d7Q=\n  endpoint: 203.0.113.9:51820\n",
    ),
    # An image in a notebook's output, in base64.
    (
        "nb/eda.ipynb",
        '   "image/png": "iVBORw0KGgoAAAANSUhEUji05lLkTafyNw2eJg4nE2VQpKOm0H9cDDMvixIkCD/SK5'
        'AviRHoGBj4yZ1dXZgxlXUE2Q6UXeLo9U7ngcx19jbYUJkJWqMAFlpnA2+bVA1rjwviESQXnD04Fw=="\n',
    ),
]


@pytest.mark.parametrize(("path", "text"), KEPT)
def test_look_alikes_are_kept(redactor: Redactor, path: str, text: str) -> None:
    assert redactor.redact(text, path).text == text
