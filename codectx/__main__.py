"""`python -m codectx` runs the command line."""

from codectx.cli import entry

# The guard matters: worker processes started with the spawn method re-import __main__.
if __name__ == "__main__":
    entry()
