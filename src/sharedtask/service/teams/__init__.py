"""Teams and who speaks for them: tokens (:mod:`~sharedtask.service.teams.tokens`) and the
pages' sign-in cookies (:mod:`~sharedtask.service.teams.signin`)."""
