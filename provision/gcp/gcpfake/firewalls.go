package gcpfake

import (
	"fmt"
	"maps"
	"slices"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// Firewall is a copy of the named firewall rule, or nil.
func (s *Server) Firewall(name string) *computepb.Firewall { return copies(s, s.firewalls, name)[0] }

// Firewalls is a copy of every firewall rule, by name.
func (s *Server) Firewalls() []*computepb.Firewall { return copies(s, s.firewalls) }

// insertFirewall creates a firewall rule as firewalls.insert does: the
// rule exists once its operation finishes.
func (s *Server) insertFirewall(body []byte, requestID string) (proto.Message, *apiError) {
	if key, ok := s.byRequest[requestID]; ok && requestID != "" {
		return s.ops[key], nil
	}
	fw := &computepb.Firewall{}
	if err := (protojson.UnmarshalOptions{}).Unmarshal(body, fw); err != nil {
		return nil, &apiError{400, "parseError", "This API does not support parsing form-encoded input: " + err.Error()}
	}
	if !nameRE.MatchString(fw.GetName()) {
		return nil, invalid("Invalid value for field 'resource.name': '%s'. Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'", fw.GetName())
	}
	if len(fw.GetAllowed()) == 0 && len(fw.GetDenied()) == 0 {
		return nil, invalid("Invalid value for field 'resource': ''. A firewall rule must allow or deny something.")
	}
	for _, a := range fw.GetAllowed() {
		for _, p := range a.GetPorts() {
			if !portRE.MatchString(p) {
				return nil, invalid("Invalid value for field 'resource.allowed[0].ports[0]': '%s'. Invalid port specification.", p)
			}
		}
	}
	if _, ok := s.firewalls[fw.GetName()]; ok {
		return nil, &apiError{409, "alreadyExists", fmt.Sprintf("The resource 'projects/%s/global/firewalls/%s' already exists", s.project, fw.GetName())}
	}
	s.seq++
	fw.Id = proto.Uint64(5000000000000000000 + s.seq*7919)
	fw.Kind = proto.String("compute#firewall")
	fw.SelfLink = proto.String(s.link("global/firewalls/%s", fw.GetName()))
	fw.CreationTimestamp = proto.String(s.timestamp())
	if fw.Direction == nil {
		fw.Direction = proto.String("INGRESS")
	}
	op := s.newOp("", "insert", "global/firewalls/"+fw.GetName(), fw.GetId(), requestID, func(op *computepb.Operation) {
		s.finish(op, nil)
		s.firewalls[fw.GetName()] = fw
	})
	return proto.CloneOf(op), nil
}

// deleteFirewall deletes a rule once its operation finishes.
func (s *Server) deleteFirewall(name, requestID string) (proto.Message, *apiError) {
	if key, ok := s.byRequest[requestID]; ok && requestID != "" {
		return s.ops[key], nil
	}
	fw, ok := s.firewalls[name]
	if !ok {
		return nil, notFound(fmt.Sprintf("projects/%s/global/firewalls/%s", s.project, name))
	}
	op := s.newOp("", "delete", "global/firewalls/"+name, fw.GetId(), requestID, func(op *computepb.Operation) {
		s.finish(op, nil)
		if cur, ok := s.firewalls[name]; ok && cur == fw {
			delete(s.firewalls, name)
		}
	})
	return proto.CloneOf(op), nil
}

func (s *Server) listFirewalls(q map[string][]string) (proto.Message, *apiError) {
	items, next, aerr := pageOf(s, s.firewalls, slices.Sorted(maps.Keys(s.firewalls)), q)
	if aerr != nil {
		return nil, aerr
	}
	return &computepb.FirewallList{Kind: proto.String("compute#firewallList"),
		Id: proto.String("projects/" + s.project + "/global/firewalls"), Items: items, NextPageToken: next}, nil
}
