package gcp

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"

	"sortie/provision"
)

// firewallName is the firewall rule that opens one cluster's
// resources.ports to its VMs, which carry the cluster's name as a network
// tag. It must not end in digits: the status code reads a VM's rank from
// such a suffix of an operation's target.
func firewallName(cluster string) string { return cluster + "-ports" }

// firewallMark starts the description of every rule sortie makes, so
// that List tells them from the project's other rules of similar names.
const firewallMark = "sortie: resources.ports of cluster "

// ensureFirewall creates the cluster's rule: TCP from anywhere to the
// ports, on the VMs tagged with the cluster's name. A rule of that name
// already there (a launch retried) is kept.
func (p *Provider) ensureFirewall(ctx context.Context, cluster string, ports []provision.PortRange) error {
	var allowed []string
	for _, r := range ports {
		allowed = append(allowed, r.String())
	}
	fw := &computepb.Firewall{
		Name:         proto.String(firewallName(cluster)),
		Description:  proto.String(firewallMark + cluster),
		Network:      proto.String("global/networks/default"),
		Direction:    proto.String("INGRESS"),
		SourceRanges: []string{"0.0.0.0/0"},
		TargetTags:   []string{cluster},
		Allowed:      []*computepb.Allowed{{IPProtocol: proto.String("tcp"), Ports: allowed}},
	}
	// No request id: a rule deleted after a failed launch must be made
	// again by the next launch of the name, which the same id would not.
	op, err := p.api.InsertFirewall(ctx, p.cfg.Project, fw)
	if isAlreadyExists(err) {
		return nil
	}
	if err != nil {
		return classify(fmt.Errorf("create firewall rule %s for ports %s: %w", fw.GetName(), strings.Join(allowed, ", "), err))
	}
	if err := p.waitGlobal(ctx, op); err != nil {
		return fmt.Errorf("create firewall rule %s for ports %s: %w", fw.GetName(), strings.Join(allowed, ", "), err)
	}
	p.logger(ctx).Info("created firewall rule", "cluster", cluster, "rule", fw.GetName(), "ports", allowed)
	return nil
}

// dropFirewall deletes the cluster's rule, if it has one, telling log.
func (p *Provider) dropFirewall(ctx context.Context, log *slog.Logger, cluster string) error {
	name := firewallName(cluster)
	op, err := p.api.DeleteFirewall(ctx, p.cfg.Project, name)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return classify(fmt.Errorf("delete firewall rule %s: %w", name, err))
	}
	if err := p.waitGlobal(ctx, op); err != nil {
		return fmt.Errorf("delete firewall rule %s: %w", name, err)
	}
	log.Info("deleted firewall rule", "cluster", cluster, "rule", name)
	return nil
}

// sweepFirewalls deletes sortie's rules whose cluster has no VM (haveVMs
// holds those that do): left by a controller that died between creating a
// rule and its VMs, or before its teardown finished. A launch of that name
// in this process is waited for first.
func (p *Provider) sweepFirewalls(ctx context.Context, haveVMs map[string]bool) {
	rules, err := p.api.Firewalls(ctx, p.cfg.Project, `name eq "sortie-.*-ports"`)
	if err != nil {
		p.log.Warn("list sortie's firewall rules", "err", classify(err))
		return
	}
	for _, fw := range rules {
		cluster, ok := strings.CutPrefix(fw.GetDescription(), firewallMark)
		if !ok || fw.GetName() != firewallName(cluster) || haveVMs[cluster] {
			continue
		}
		func() {
			defer p.launches.Lock(cluster)()
			left, err := p.clusterInstances(ctx, cluster)
			if err != nil || len(left) > 0 {
				return
			}
			if err := p.dropFirewall(ctx, p.log, cluster); err != nil {
				p.log.Warn("delete a left-over firewall rule", "cluster", cluster, "err", err)
			}
		}()
	}
}
