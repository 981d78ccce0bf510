package gcpfake

import (
	"fmt"
	"regexp"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

var (
	nameRE       = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)
	labelKeyRE   = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,62}$`)
	labelValueRE = regexp.MustCompile(`^[a-z0-9_-]{0,63}$`)
	portRE       = regexp.MustCompile(`^[0-9]{1,5}(-[0-9]{1,5})?$`)
	// serviceAccountRE is a service account's email (a user-managed one's
	// or the Compute Engine default's).
	serviceAccountRE = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]*@[a-z0-9][a-z0-9.:-]*\.gserviceaccount\.com$`)
)

// insert creates an instance as instances.insert does: a request id seen
// before answers the operation it started, whatever became of it.
func (s *Server) insert(zone string, body []byte, requestID string) (proto.Message, *apiError) {
	if key, ok := s.byRequest[requestID]; ok && requestID != "" {
		return s.ops[key], nil
	}
	in := &computepb.Instance{}
	if err := (protojson.UnmarshalOptions{}).Unmarshal(body, in); err != nil {
		return nil, &apiError{400, "parseError", "This API does not support parsing form-encoded input: " + err.Error()}
	}
	if aerr := s.validate(zone, in); aerr != nil {
		return nil, aerr
	}
	key := zone + "/" + in.GetName()
	if _, ok := s.instances[key]; ok {
		return nil, &apiError{409, "alreadyExists", fmt.Sprintf("The resource 'projects/%s/zones/%s/instances/%s' already exists", s.project, zone, in.GetName())}
	}
	s.seq++
	in.Id = proto.Uint64(4000000000000000000 + s.seq*7919)
	in.Kind = proto.String("compute#instance")
	in.Zone = proto.String(s.link("zones/%s", zone))
	in.SelfLink = proto.String(s.link("zones/%s/instances/%s", zone, in.GetName()))
	in.MachineType = proto.String(s.link("zones/%s/machineTypes/%s", zone, lastSegment(in.GetMachineType())))
	in.CreationTimestamp = proto.String(s.timestamp())
	in.Status = proto.String("PROVISIONING")
	in.Fingerprint = proto.String(fmt.Sprintf("fp%d=", s.seq))
	in.LabelFingerprint = proto.String(fmt.Sprintf("lfp%d=", s.seq))
	for i, ni := range in.NetworkInterfaces {
		ni.Name = proto.String(fmt.Sprintf("nic%d", i))
		ni.NetworkIP = proto.String(fmt.Sprintf("10.128.%d.%d", (s.seq/250)%250, s.seq%250+2))
		for _, ac := range ni.AccessConfigs {
			ac.NatIP = proto.String(s.natIP)
			ac.Kind = proto.String("compute#accessConfig")
		}
	}
	for i, d := range in.Disks {
		if d.GetBoot() {
			s.bootImages[key] = imagePath(s.project, d.GetInitializeParams().GetSourceImage())
		}
		d.Index = proto.Int32(int32(i))
		d.Source = proto.String(s.link("zones/%s/disks/%s", zone, in.GetName()))
		d.InitializeParams = nil // the API does not echo them back
	}

	if e, failing := s.insertErr[zone]; failing {
		return proto.CloneOf(s.instanceOp(zone, "insert", in, requestID, func(op *computepb.Operation) { s.finish(op, &e) })), nil
	}
	s.instances[key] = in
	op := s.instanceOp(zone, "insert", in, requestID, func(op *computepb.Operation) {
		s.finish(op, nil)
		if cur, ok := s.instances[key]; ok && cur == in {
			in.Status = proto.String("RUNNING")
			in.LastStartTimestamp = proto.String(s.timestamp())
		}
	})
	return proto.CloneOf(op), nil
}

// validate rejects what Compute Engine rejects at once, with its messages.
func (s *Server) validate(zone string, in *computepb.Instance) *apiError {
	if !nameRE.MatchString(in.GetName()) {
		return invalid("Invalid value for field 'resource.name': '%s'. Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'", in.GetName())
	}
	mt := lastSegment(in.GetMachineType())
	if in.GetMachineType() == "" {
		return invalid("Invalid value for field 'resource.machineType': ''. Machine type must be specified.")
	}
	known := false
	for _, t := range s.types {
		known = known || t.Name == mt
	}
	if !known {
		return invalid("Invalid value for field 'resource.machineType': '%s'. Machine type with name '%s' does not exist in zone '%s'.",
			in.GetMachineType(), mt, zone)
	}
	if len(in.GetDisks()) == 0 {
		return invalid("Invalid value for field 'resource.disks': ''. At least one disk must be specified.")
	}
	for _, d := range in.GetDisks() {
		img := d.GetInitializeParams().GetSourceImage()
		if img == "" {
			continue
		}
		path := imagePath(s.project, img)
		if !s.images[path] {
			return notFound(path)
		}
		if d.GetInitializeParams().GetDiskSizeGb() < 0 {
			return invalid("Invalid value for field 'resource.disks[0].initializeParams.diskSizeGb': '%d'.", d.GetInitializeParams().GetDiskSizeGb())
		}
	}
	if len(in.GetServiceAccounts()) > 1 {
		return invalid("Invalid value for field 'resource.serviceAccounts': ''. At most one service account may be specified.")
	}
	for _, sa := range in.GetServiceAccounts() {
		if e := sa.GetEmail(); e != "default" && !serviceAccountRE.MatchString(e) {
			return invalid("Invalid value for field 'resource.serviceAccounts[0].email': '%s'. The service account is not an email or default.", e)
		}
		for _, sc := range sa.GetScopes() {
			if !strings.HasPrefix(sc, "https://www.googleapis.com/auth/") {
				return invalid("Invalid value for field 'resource.serviceAccounts[0].scopes[]': '%s'. Scopes must be https://www.googleapis.com/auth/ URLs.", sc)
			}
		}
	}
	for k, v := range in.GetLabels() {
		if !labelKeyRE.MatchString(k) {
			return invalid("Invalid value for field 'resource.labels': '%s'. Label keys must start with a lowercase letter and contain only lowercase letters, digits, '_' and '-'.", k)
		}
		if !labelValueRE.MatchString(v) {
			return invalid("Invalid value for field 'resource.labels': '%s'. Label values may contain only lowercase letters, digits, '_' and '-'.", v)
		}
	}
	switch a := in.GetScheduling().GetInstanceTerminationAction(); a {
	case "", "DELETE", "STOP":
	default:
		return invalid("Invalid value for field 'resource.scheduling.instanceTerminationAction': '%s'.", a)
	}
	return nil
}

// delete starts deleting an instance: STOPPING now, gone when the
// operation finishes.
func (s *Server) delete(zone, name, requestID string) (proto.Message, *apiError) {
	if key, ok := s.byRequest[requestID]; ok && requestID != "" {
		return s.ops[key], nil
	}
	key := zone + "/" + name
	in, ok := s.instances[key]
	if !ok {
		return nil, notFound(fmt.Sprintf("projects/%s/zones/%s/instances/%s", s.project, zone, name))
	}
	in.Status = proto.String("STOPPING")
	op := s.instanceOp(zone, "delete", in, requestID, func(op *computepb.Operation) {
		s.finish(op, nil)
		if cur, ok := s.instances[key]; ok && cur == in {
			delete(s.instances, key)
		}
	})
	return proto.CloneOf(op), nil
}

// imagePath is a source image as a path from the API root
// ("projects/P/global/images/..."), its project project when it names none.
func imagePath(project, img string) string {
	path := relative(img)
	if strings.HasPrefix(path, "global/") {
		path = "projects/" + project + "/" + path
	}
	return path
}
