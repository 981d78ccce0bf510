// Command sortie launches managed jobs on cloud clusters and keeps them alive.
//
// It must not import controller/clouds/all, provision/aws, provision/gcp,
// provision/kubernetes or a cloud SDK: the command you type starts in
// milliseconds, and only the controller program (and sortie-sync, for buckets)
// links a cloud SDK.
package main

import (
	"context"
	"os"

	"sortie/cmd/internal/cli"
	"sortie/controller/clouds"
	"sortie/controller/contract"
	"sortie/controller/service"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, backend))
}

// backend is the service over this machine's home, without the cloud
// SDKs: what needs them is asked of the controller program.
var backend = cli.Backend{
	Open: func(ctx context.Context, home string, p cli.Programs) (cli.LocalService, error) {
		svc, err := service.Open(ctx, home, clouds.Light())
		if err != nil {
			return nil, err
		}
		svc.CheckClouds, svc.RemoteLogs, svc.RemoteShell = p.CheckClouds, p.RemoteLogs, p.RemoteShell
		svc.RefreshPricesHook = p.RefreshPrices
		return svc, nil
	},
	Plan: func(ctx context.Context, home string, req contract.LaunchRequest) (*contract.Plan, error) {
		svc, err := service.OpenConfig(home, clouds.Light())
		if err != nil {
			return nil, err
		}
		return svc.Plan(ctx, req)
	},
	Sources: service.LocalSources,
}
