import sys

from spark_ide.modelserver.cli import main

sys.exit(main(sys.argv[1:]))
