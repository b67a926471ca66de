from mirrorspec.cli import main

main()
