"""`research-agent`: the command-line client of the HTTP APIs (research jobs, and answers streamed live)."""
