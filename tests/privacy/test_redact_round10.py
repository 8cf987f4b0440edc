"""Secrets the tenth outside red team got past the redactor by the syntax around them (string
literals, assignments, joins and lists of other languages; diagnostics), and the look-alikes that
must stay. Each positive went out in clear before the change (values here are our own).
"""

from __future__ import annotations

import pytest

from codectx.privacy.redact import Redactor

KEY = b"test-key-test-key-test-key-test!"
PW = "Kestrel4Basin"


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor(key=KEY)


def _codes(word: str) -> str:
    return ", ".join(str(ord(c)) for c in word)


SECRETS = [
    # String literals of other syntaxes.
    ("s.rs", f'const DB_PASSWORD: &str = r#"{PW}"#;\n'),
    ("s.swift", f'let dbPassword = #"{PW}"#\n'),
    ("s.scala", f'val dbPassword = s"{PW}"\n'),
    ("s.exs", f"config :app, Repo, password: ~s({PW})\n"),
    ("s.rb", f"DB_PASSWORD = %q({PW})\n"),
    ("s.pl", f"my $db_password = qq{{{PW}}};\n"),
    ("s.lua", f"local db_password = [[{PW}]]\n"),
    ("s.lua", f"local db_password = [==[{PW}]==]\n"),
    ("s.ml", f"let db_password = {{|{PW}|}}\n"),
    ("s.sh", f"DB_PASSWORD=$'{PW}'\n"),
    ("c.dhall", f"{{ password = ''{PW}'' }}\n"),
    # Heredocs and multi-line strings: the first line is the value.
    ("s.php", f"<?php\n$db_password = <<<EOT\n{PW}\nEOT;\n"),
    ("s.rb", f"DB_PASSWORD = <<~EOS\n  {PW}\nEOS\n"),
    ("s.ps1", f'$DbPassword = @"\n{PW}\n"@\n'),
    ("main.tf", f'variable "db" {{\n  default = {{\n    password = <<EOT\n{PW}\nEOT\n  }}\n}}\n'),
    # Assignments of other languages.
    ("s.c", f'#define DB_PASSWORD "{PW}"\n'),
    ("s.erl", f'-define(DB_PASSWORD, "{PW}").\n'),
    ("s.ex", f'@db_password "{PW}"\n'),
    ("s.tcl", f'set db_password "{PW}"\n'),
    ("s.lisp", f'(defparameter *db-password* "{PW}")\n'),
    ("s.R", f'db_password <- "{PW}"\n'),
    ("Makefile", f"DB_PASSWORD ?= {PW}\n"),
    ("s.sh", f'DB_PASSWORD+="{PW}"\n'),
    ("s.vb", f'Dim dbPassword As String = "{PW}"\n'),
    ("s.jl", f'const DB_PASSWORD::String = "{PW}"\n'),
    ("s.kt", f'val cfg = mapOf("password" to "{PW}")\n'),
    ("s.scala", f'val cfg = Map("password" -> "{PW}")\n'),
    ("s.ts", f'const dbPassword: string | undefined = "{PW}";\n'),
    ("s.cpp", f'std::string db_password{{"{PW}"}};\n'),
    ("s.rs", f'let db_password = String::from("{PW}");\n'),
    # Comment lines of other languages between the key and the value.
    ("s.js", f'const cfg = {{\n  password: /* rotated */ "{PW}",\n}};\n'),
    ("s.sql", f"SELECT set_config('app.password',\n  -- rotated\n  '{PW}', false);\n"),
    ("c.xml", f"<config>\n  <password><![CDATA[{PW}]]></password>\n</config>\n"),
    # A provider token split into pieces, whatever joins them.
    ("s.js", 'const t = "AKIA7HGXDG".concat("AAX5RQFBIG");\n'),
    ("s.py", 't = "".join(["AKIA7HGXDG", "AAX5RQFBIG"])\n'),
    ("s.php", "<?php $t = sprintf('%s%s', 'AKIA7HGXDG', 'AAX5RQFBIG');\n"),
    ("s.rb", 't = +"AKIA7HGXDG"\nt << "AAX5RQFBIG"\n'),
    ("s.ex", 't = "AKIA7HGXDG" <> "AAX5RQFBIG"\n'),
    ("S.cs", 'var sb = new StringBuilder();\nsb.Append("AKIA7HGXDG").Append("AAX5RQFBIG");\n'),
    # Character lists named on the line above, and other item spellings.
    ("S.java", "static final char[] DB_PASSWORD =\n    {'K', 'e', 's', 't', 'r', 'e', 'l', '4', 'B'};\n"),
    ("s.py", f"DB_PASSWORD = bytes(\n    [{_codes(PW)}]).decode()\n"),
    ("s.rs", "const DB_PASSWORD: [u8; 9] = [b'K', b'e', b's', b't', b'r', b'e', b'l', b'4', b'B'];\n"),
    (
        "S.java",
        "char[] dbPassword = {'\\u004b', '\\u0065', '\\u0073', '\\u0074',\n"
        "    '\\u0072', '\\u0065', '\\u006c', '\\u0034'};\n",
    ),
    # YAML anchors and tags under every secret's name, the value on the next line, templates.
    ("c.yaml", f"jwt:\n  signing_key: &sk {PW}\n"),
    ("c.yaml", f"db:\n  password: &pw\n    {PW}\n"),
    ("values.yaml.tpl", f"db:\n  password: &pw {PW}\n"),
    ("c.yaml", f"db: {{ password: &pw {PW} }}\n"),
    # A properties value after `= \\`.
    ("a.properties", f"db.password = \\\n    {PW}\n"),
]


@pytest.mark.parametrize("path,text", SECRETS)
def test_secrets_are_redacted(redactor: Redactor, path: str, text: str) -> None:
    out = redactor.redact(text, path).text
    for piece in (PW, "AAX5RQFBIG", "'K', 'e', 's'", _codes(PW)[:20], "b'K', b'e'", "'\\u004b', '\\u0065'"):
        assert piece not in out, out


KEPT = [
    ("s.py", 'name = "production"\nmode: str = "development"\n'),
    ("s.ts", 'const label: string | undefined = "Password";\n'),
    ("s.kt", 'val cfg = mapOf("password" to System.getenv("DB_PASSWORD"))\n'),
    ("s.cpp", 'std::string password_hint("must hold a digit");\n'),
    ("s.rb", 'check_password("")\nDB_HOST = %q(db.internal)\n'),
    ("run.sh", 'mysql -u root -p"$PW" \\\n  --host=db.internal mydb\n'),
    ("README.md", "Line one\\\nline two\n"),
    ("s.py", 'ids = ["AKIA is the prefix", "of a key id"]\nregions = ["us-east-1", "eu-west-1"]\n'),
    ("lut.c", "static const char digits[] = {'0', '1', '2', '3', '4', '5', '6', '7', '8', '9'};\n"),
    ("c.yaml", "db:\n  password: !vault |\n    $ANSIBLE_VAULT;1.1;AES256\n"),
]


@pytest.mark.parametrize("path,text", KEPT)
def test_look_alikes_stay(redactor: Redactor, path: str, text: str) -> None:
    assert redactor.redact(text, path).findings == []
