"""Cleanline's web admin console (Django). The console issues build it out; for now it holds
the settings every later part stands on."""
