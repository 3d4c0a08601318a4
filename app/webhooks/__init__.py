"""Outbound webhooks: destinations (the SSRF guard), the outbox's deliveries and their
attempts, and the sender each worker runs (`hooks.install` plugs it in).

The outbox rows themselves are written by the kernel, in the statement of the transition
they announce (`app.store.change_rows.webhook_targets`, the backends), so a crash loses none.
"""
