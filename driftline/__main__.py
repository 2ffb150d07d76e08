"""`python -m driftline`: the command line."""

from driftline.flows.cli import main

main()
