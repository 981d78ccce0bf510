// Package gcpfake is an in-memory Compute Engine REST API for tests: the
// real client library (cloud.google.com/go/compute/apiv1) talks to it over
// HTTP on 127.0.0.1 and gets the API's JSON shapes back (int64 fields as
// strings, items/nextPageToken, aggregated lists keyed by "zones/Z",
// operations that finish DONE with error.errors[{code,message}]).
//
// It keeps instances and zone operations, dedups inserts and deletes by
// requestId, and makes the weather: stockouts per zone and preemptions per
// VM. Every call is counted per method so that tests can assert batching.
//
// Operations finish on the next request after the one that started them,
// as if Compute Engine worked while the caller was away: an insert answers
// RUNNING, and whatever the caller asks next sees it DONE.
package gcpfake

import (
	"fmt"
	"maps"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/proto"
)

// Options configures a fake. Every field is optional.
type Options struct {
	// Project is the only project the fake knows; default "sortie-test".
	Project string
	// Zones maps region -> zones; default DefaultZones.
	Zones map[string][]string
	// MachineTypes are offered in every zone; default DefaultMachineTypes.
	MachineTypes []MachineType
	// Images are the boot images inserts may name; default DefaultImages.
	Images []string
	// Families maps an image family ("projects/P/global/images/family/F")
	// to the name of its newest image in P, which images.getFromFamily
	// returns and inserts may name as projects/P/global/images/NAME. A
	// family path in Images alone answers with the family's own name.
	Families map[string]string
	// ExternalIP is every instance's natIP; default 127.0.0.1, so that SSH
	// through a proxy command lands on this machine.
	ExternalIP string
	// PageSize bounds the items of one list page; default 500, the API's.
	PageSize int
	// Now is the fake's clock; default time.Now.
	Now func() time.Time
}

// Server is a running fake. Its methods are safe for concurrent use.
type Server struct {
	// URL is the endpoint to give option.WithEndpoint.
	URL string

	project  string
	regions  map[string]string // zone -> region
	zones    []string          // sorted
	types    []MachineType
	images   map[string]bool
	families map[string]string // family path -> its newest image's path
	natIP    string
	pageSize int
	now      func() time.Time

	mu        sync.Mutex
	instances map[string]*computepb.Instance // "zone/name"
	// bootImages are the images the instances' boot disks were made from,
	// which the API does not echo back ("zone/name" -> image path).
	bootImages map[string]string
	firewalls  map[string]*computepb.Firewall  // name
	ops        map[string]*computepb.Operation // "zone/opname" or "global/opname"
	opOrder    []string
	byRequest  map[string]string // requestId -> "zone/opname"
	pending    []pendingOp
	insertErr  map[string]opError      // zone -> error of every insert there
	httpErr    map[string][]*httpError // per call from now; nil passes
	calls      map[string]int
	seq        uint64
}

// pendingOp is an operation and what happens when it finishes.
type pendingOp struct {
	key    string
	finish func(op *computepb.Operation)
}

type opError struct{ code, message string }

type httpError struct {
	status          int
	reason, message string
}

// New starts a fake on 127.0.0.1 and stops it when the test ends.
func New(t testing.TB, o Options) *Server {
	t.Helper()
	s := newServer(o)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	s.URL = ts.URL
	return s
}

func newServer(o Options) *Server {
	if o.Project == "" {
		o.Project = "sortie-test"
	}
	if o.Zones == nil {
		o.Zones = DefaultZones()
	}
	if o.MachineTypes == nil {
		o.MachineTypes = DefaultMachineTypes()
	}
	if o.Images == nil {
		o.Images = DefaultImages()
	}
	if o.ExternalIP == "" {
		o.ExternalIP = "127.0.0.1"
	}
	if o.PageSize <= 0 {
		o.PageSize = 500
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Server{
		project: o.Project, regions: map[string]string{}, types: slices.Clone(o.MachineTypes),
		images: map[string]bool{}, natIP: o.ExternalIP, pageSize: o.PageSize, now: o.Now,
		instances: map[string]*computepb.Instance{}, bootImages: map[string]string{}, ops: map[string]*computepb.Operation{},
		firewalls: map[string]*computepb.Firewall{},
		byRequest: map[string]string{}, insertErr: map[string]opError{},
		httpErr: map[string][]*httpError{}, calls: map[string]int{},
	}
	for region, zones := range o.Zones {
		for _, z := range zones {
			s.regions[z] = region
			s.zones = append(s.zones, z)
		}
	}
	sort.Strings(s.zones)
	for _, img := range o.Images {
		s.images[img] = true
	}
	s.families = map[string]string{}
	for fam, name := range o.Families {
		project, _, _ := strings.Cut(strings.TrimPrefix(fam, "projects/"), "/")
		path := "projects/" + project + "/global/images/" + name
		s.families[fam] = path
		s.images[path] = true
	}
	return s
}

// Project is the fake's project id.
func (s *Server) Project() string { return s.project }

// SetCapacity makes every later insert in zone fail (its operation ends
// DONE with ZONE_RESOURCE_POOL_EXHAUSTED) when ok is false, and lifts that.
func (s *Server) SetCapacity(zone string, ok bool) {
	if ok {
		s.FailInserts(zone, "", "")
		return
	}
	s.FailInserts(zone, "ZONE_RESOURCE_POOL_EXHAUSTED",
		fmt.Sprintf("The zone 'projects/%s/zones/%s' does not have enough resources available to fulfill the request.  Try a different zone, or try again later.", s.project, zone))
}

// FailInserts makes every later insert in zone end DONE with the operation
// error code and message (QUOTA_EXCEEDED, ...); an empty code lifts it.
func (s *Server) FailInserts(zone, code, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if code == "" {
		delete(s.insertErr, zone)
		return
	}
	s.insertErr[zone] = opError{code, message}
}

// FailNext makes the next call of method (see Calls) answer an HTTP error
// in the API's error format, with reason as errors[0].reason.
func (s *Server) FailNext(method string, status int, reason, message string) {
	s.FailCall(method, 1, status, reason, message)
}

// FailCall makes the nth call of method from now on (1 is the next) answer
// an HTTP error, as FailNext does.
func (s *Server) FailCall(method string, nth, status int, reason, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.httpErr[method]
	for len(q) < nth {
		q = append(q, nil)
	}
	q[nth-1] = &httpError{status, reason, message}
	s.httpErr[method] = q
}

// Calls is how many requests method got: "instances.insert",
// "instances.get", "instances.delete", "instances.list",
// "instances.aggregatedList", "zoneOperations.get", "zoneOperations.list",
// "zoneOperations.wait", "globalOperations.aggregatedList", "zones.list",
// "machineTypes.aggregatedList", "machineTypes.list", "images.get",
// "images.getFromFamily", "firewalls.insert", "firewalls.get",
// "firewalls.delete", "firewalls.list", "globalOperations.get". Each page
// of a list counts once.
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[method]
}

// BootImage is the image the boot disk of the instance name in zone was
// made from, as a path from the API root ("projects/P/global/images/N");
// "" when no such instance was inserted. The API itself does not say it.
func (s *Server) BootImage(zone, name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bootImages[zone+"/"+name]
}

// AllCalls is a copy of every method's count.
func (s *Server) AllCalls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.calls)
}

// ResetCalls zeroes the counts.
func (s *Server) ResetCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.calls)
}

// Instance is a copy of the named instance, or nil.
func (s *Server) Instance(zone, name string) *computepb.Instance {
	return copies(s, s.instances, zone+"/"+name)[0]
}

// Instances is a copy of every instance, by zone then name.
func (s *Server) Instances() []*computepb.Instance { return copies(s, s.instances) }

// copies is, once the operations due have finished, a copy of m's value
// at each key (nil where there is none), or with no key of every value in
// m, by key.
func copies[T proto.Message](s *Server, m map[string]T, keys ...string) []T {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settle()
	if len(keys) == 0 {
		keys = slices.Sorted(maps.Keys(m))
	}
	out := make([]T, len(keys))
	for i, k := range keys {
		if v, ok := m[k]; ok {
			out[i] = proto.CloneOf(v)
		}
	}
	return out
}

// Preempt takes a spot VM away as Compute Engine does: per its
// instanceTerminationAction it is stopped (status TERMINATED) or deleted,
// and a compute.instances.preempted operation records why.
func (s *Server) Preempt(zone, name string) error {
	return s.act("preempt", zone, name, func(in *computepb.Instance) error {
		sch := in.GetScheduling()
		if sch.GetProvisioningModel() != "SPOT" && !sch.GetPreemptible() {
			return fmt.Errorf("preempt: %s is not a spot VM (provisioningModel %q)", name, sch.GetProvisioningModel())
		}
		s.unasked(zone, "compute.instances.preempted", in, "system", "Instance was preempted.")
		if sch.GetInstanceTerminationAction() == "DELETE" {
			delete(s.instances, zone+"/"+name)
		} else {
			s.markStopped(in)
		}
		return nil
	})
}

// someone is who acts on VMs behind sortie's back.
const someone = "someone@example.com"

// Remove deletes an instance behind sortie's back, without a preemption
// (a person with the console, a project cleanup script).
func (s *Server) Remove(zone, name string) error {
	return s.act("remove", zone, name, func(in *computepb.Instance) error {
		s.unasked(zone, "delete", in, someone, "")
		delete(s.instances, zone+"/"+name)
		return nil
	})
}

// Stop stops a VM behind sortie's back (a person with the console, a host
// error): status TERMINATED, recorded as a stop operation.
func (s *Server) Stop(zone, name string) error {
	return s.act("stop", zone, name, func(in *computepb.Instance) error {
		s.unasked(zone, "stop", in, someone, "")
		s.markStopped(in)
		return nil
	})
}

// act runs do on an instance under the lock, once the operations due have
// finished; verb names the caller in the error for a missing instance.
func (s *Server) act(verb, zone, name string, do func(in *computepb.Instance) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settle()
	in, ok := s.instances[zone+"/"+name]
	if !ok {
		return fmt.Errorf("%s: no instance %s in %s", verb, name, zone)
	}
	return do(in)
}

// unasked records a finished operation on in that user, not sortie, caused.
func (s *Server) unasked(zone, kind string, in *computepb.Instance, user, message string) {
	op := s.instanceOp(zone, kind, in, "", nil)
	op.User = proto.String(user)
	if message != "" {
		op.StatusMessage = proto.String(message)
	}
	s.finish(op, nil)
}

// markStopped is what a stop does to a VM: TERMINATED, as of now.
func (s *Server) markStopped(in *computepb.Instance) {
	in.Status = proto.String("TERMINATED")
	in.LastStopTimestamp = proto.String(s.timestamp())
}

// ForgetOperations drops every finished operation, as Compute Engine does
// after a while.
func (s *Server) ForgetOperations() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settle()
	s.ops = map[string]*computepb.Operation{}
	s.opOrder = nil
	s.byRequest = map[string]string{}
}

// settle finishes every operation started by an earlier request.
func (s *Server) settle() {
	pending := s.pending
	s.pending = nil
	for _, p := range pending {
		if op, ok := s.ops[p.key]; ok {
			p.finish(op)
		}
	}
}

// newOp records a RUNNING operation on the resource at target (a path
// below the project: "zones/Z/instances/N", "global/firewalls/N") whose id
// is targetID, in zone or, when zone is "", global. The next request
// finishes it with finish, unless that is nil.
func (s *Server) newOp(zone, kind, target string, targetID uint64, requestID string, finish func(*computepb.Operation)) *computepb.Operation {
	s.seq++
	now := s.timestamp()
	name := fmt.Sprintf("operation-%d-%d", s.now().UnixMilli(), s.seq)
	scope, key := "global", "global/"+name
	if zone != "" {
		scope, key = "zones/"+zone, zone+"/"+name
	}
	op := &computepb.Operation{
		Kind:          proto.String("compute#operation"),
		Id:            proto.Uint64(7000000000000000000 + s.seq),
		Name:          proto.String(name),
		OperationType: proto.String(kind),
		TargetLink:    proto.String(s.link("%s", target)),
		TargetId:      proto.Uint64(targetID),
		Status:        computepb.Operation_RUNNING.Enum(),
		User:          proto.String("sortie@" + s.project + ".iam.gserviceaccount.com"),
		Progress:      proto.Int32(0),
		InsertTime:    proto.String(now),
		StartTime:     proto.String(now),
		SelfLink:      proto.String(s.link("%s/operations/%s", scope, name)),
	}
	if zone != "" {
		op.Zone = proto.String(s.link("zones/%s", zone))
	}
	if requestID != "" {
		op.ClientOperationId = proto.String(requestID)
		s.byRequest[requestID] = key
	}
	s.ops[key] = op
	s.opOrder = append(s.opOrder, key)
	if finish != nil {
		s.pending = append(s.pending, pendingOp{key: key, finish: finish})
	}
	return op
}

// instanceOp is newOp on instance in of zone.
func (s *Server) instanceOp(zone, kind string, in *computepb.Instance, requestID string, finish func(*computepb.Operation)) *computepb.Operation {
	return s.newOp(zone, kind, "zones/"+zone+"/instances/"+in.GetName(), in.GetId(), requestID, finish)
}

// finish marks op DONE, failed with e when e is not nil.
func (s *Server) finish(op *computepb.Operation, e *opError) {
	op.Status = computepb.Operation_DONE.Enum()
	op.Progress = proto.Int32(100)
	op.EndTime = proto.String(s.timestamp())
	if e != nil {
		op.Error = &computepb.Error{Errors: []*computepb.Errors{{
			Code: proto.String(e.code), Message: proto.String(e.message),
		}}}
	}
}

// timestamp is the clock in the API's RFC 3339 form with milliseconds.
func (s *Server) timestamp() string {
	return s.now().Format("2006-01-02T15:04:05.000-07:00")
}
