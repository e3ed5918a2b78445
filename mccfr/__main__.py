from mccfr.cli.main import main

main()
