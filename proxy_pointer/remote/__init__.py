"""Clients of remote services: the Gemini client both Gemini backends share (:mod:`.gemini`)
and the one retry policy every backend that talks to a server uses (:mod:`.retry`)."""
