from rtsched.cli import run

run()
