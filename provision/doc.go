// Package provision declares what sortie asks of a cloud: launch a cluster of
// nodes for a placement, report the nodes' states in batches, terminate, find
// what sortie launched, and reach a node to run commands on it. Each backend
// lives in its own folder (local, sim, aws, gcp, kubernetes) and passes one conformance
// suite (provisiontest).
//
// It must not import sortie/controller/... or sortie/strategy: providers know
// nothing of jobs or decisions (smoke_tests/layout_test.go checks it).
//
// # Adding a cloud
//
//  1. Its provider in a folder of its own under provision/, implementing
//     Provider; run the conformance suite (provision/provisiontest) against it
//     in its tests. Nodes that run the task as their own command, with no node
//     agent (as pods do), implement TaskRunner too: the controller then starts,
//     watches, reads and stops the task through it, and launches a new cluster
//     for each restart. Its lines about one cluster (its launch, status,
//     termination) go through provision.Logger, so that they carry the
//     fields of the attempt the cluster is for. Its reference for users goes
//     in a README.md beside it.
//  2. Its section in controller/config (FooConfig, a field of Config).
//  3. One entry in the registry: a clouds.Cloud (name, how to open the
//     provider from the config, how `sortie check` checks it) in
//     controller/clouds/all, added to all.Clouds(), or in controller/clouds
//     if it links no SDK.
//
// The controller, the service and the CLI find clouds through the registry.
package provision
