"""The `envelope-proxy` command: the composition root that starts the proxy, the embedded controller,
the demo and the Spark audit job, and the tools beside them (SCRAM users, the dev CA, authorizer checks,
the pytest plug-in). It imports every other package and nothing imports it."""
