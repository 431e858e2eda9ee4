"""The embedded local runtime: moto in-process standing in for AWS, one HTTP server for every API."""
