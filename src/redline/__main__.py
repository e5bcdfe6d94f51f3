"""``python -m redline``: the same as the ``redline`` command."""

from redline.cli.main import main

main()
