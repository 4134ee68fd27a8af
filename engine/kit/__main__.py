from kit.cli.main import main

main()
