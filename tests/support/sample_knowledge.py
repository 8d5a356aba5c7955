"""A knowledge item the rehearsal and the cold-start benchmark put in the knowledge bucket and sync."""

#: The ADR's id, as its front matter names it.
ADR_ID = "adr-007-queue-choice"
#: The ADR's markdown, front matter first.
ADR = f"""---
id: {ADR_ID}
type: adr
title: Queues for Asynchronous Work
summary: Use SQS for asynchronous work between services
status: accepted
tags: [messaging, queues]
created: "2026-01-05"
---
# Queues for Asynchronous Work

Services hand asynchronous work to each other through SQS queues, never through shared tables.
"""
