"""``python -m cloudai``: the same as the ``cloudai`` command."""

from cloudai.cli import main

main()
