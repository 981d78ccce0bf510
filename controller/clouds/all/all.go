// Package all lists every cloud this build of the controller drives,
// including those that link a cloud SDK. Only the controller process
// imports it.
//
// It must not import sortie/controller: it maps config onto providers, and the
// loop is given the clouds, not the other way.
package all

import "sortie/controller/clouds"

// Clouds is the whole registry: one entry per cloud.
func Clouds() []clouds.Cloud {
	return append(clouds.Light(), AWS(), GCP(), Kubernetes())
}
