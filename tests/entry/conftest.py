"""Front doors: the Lambda handlers (functions/*/app.py) and mnemo.entry on events shaped as AWS sends them
(API Gateway REST and HTTP API, Bedrock Agents, EventBridge, MCP over REST), built from the documented
shapes in tests/fixtures (tests/support: aws_events, http_api_events, identity_events), in process on the
embedded stack. A few start an HTTP server in a thread on a free port (`mnemo serve`, a stand-in
bedrock-runtime) or run a handler in a fresh Python process; no moto, no browser. No fixtures of their
own."""
