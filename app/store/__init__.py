"""Persistence: tables, engines and the run repository (PostgreSQL or embedded SQLite)."""
