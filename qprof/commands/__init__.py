"""One module per `qprof` subcommand: ``add_parser(parser)`` fills an argparse parser,
``run(args) -> int`` returns the exit status."""
