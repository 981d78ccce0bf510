// Package metadata asks the clouds' metadata services for preemption
// notices over HTTP: the AWS instance metadata service (IMDSv2: a session
// token, then the spot instance-action and rebalance recommendation) and the
// GCE metadata server (a long poll of instance/preempted). HTTP is package
// notice's Metadata; the node agent's program (cmd/sortie-agent) links it.
//
// It must not import sortie/controller/..., sortie/provision/node or anything
// from github.com or cloud.google.com: only the agent's program asks the
// metadata services.
package metadata
