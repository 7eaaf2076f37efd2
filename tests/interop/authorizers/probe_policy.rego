# The policy of probe_acls.jsonl, for the Open Policy Agent authorizer plug-in (Rego v1).
# input: the plug-in's {"requestContext": ..., "action": ...}; clientAddress is InetAddress.toString ("/127.0.0.2").
package kafka.authz

default allow := false

principal := input.requestContext.principal.name

host := trim_prefix(input.requestContext.clientAddress, "/")

resource := input.action.resourcePattern

allow if {
	principal == "alice"
	resource.resourceType == "TOPIC"
	input.action.operation in {"CREATE", "ALTER", "ALTER_CONFIGS"}
	startswith(resource.name, "team-a-")
}

allow if {
	principal == "bob"
	resource.resourceType == "CLUSTER"
	input.action.operation == "ALTER"
}

allow if {
	principal == "bob"
	host == "127.0.0.2"
	resource.resourceType == "TOPIC"
	input.action.operation == "CREATE"
	startswith(resource.name, "team-a-")
}
