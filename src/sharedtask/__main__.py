from sharedtask.cli import entry

entry()
