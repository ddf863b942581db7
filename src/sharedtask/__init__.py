"""sharedtask: run IR shared tasks the TIRA way (spec -> sandbox -> validate -> evaluate -> leaderboard)."""

__version__ = "0.1.0"
