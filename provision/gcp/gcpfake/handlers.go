package gcpfake

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"cloud.google.com/go/compute/apiv1/computepb"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// apiError is an HTTP error in the API's format.
type apiError struct {
	status          int
	reason, message string
}

func notFound(what string) *apiError {
	return &apiError{404, "notFound", fmt.Sprintf("The resource '%s' was not found", what)}
}

func invalid(format string, args ...any) *apiError {
	return &apiError{400, "invalid", fmt.Sprintf(format, args...)}
}

var route = regexp.MustCompile(`^/compute/v1/projects/([^/]+)/(.+)$`)

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := route.FindStringSubmatch(r.URL.Path)
	if m == nil {
		writeError(w, notFound(r.URL.Path))
		return
	}
	project, rest := m[1], strings.Split(m[2], "/")
	method := methodName(r.Method, rest)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[method]++
	s.settle()
	if q := s.httpErr[method]; len(q) > 0 {
		s.httpErr[method] = q[1:]
		if q[0] != nil {
			writeError(w, &apiError{q[0].status, q[0].reason, q[0].message})
			return
		}
	}
	// Public images live in other projects; everything else in ours.
	if project != s.project && !strings.HasPrefix(method, "images.") {
		writeError(w, notFound("projects/"+project))
		return
	}
	resp, aerr := s.dispatch(method, project, rest, r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	b, err := protojson.Marshal(resp)
	if err != nil {
		writeError(w, &apiError{500, "backendError", err.Error()})
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.Write(b)
}

// methodName names a request as Calls counts it.
func methodName(verb string, p []string) string {
	n := len(p)
	switch {
	case n == 1 && p[0] == "zones":
		return "zones.list"
	case n == 2 && p[0] == "aggregated":
		return map[string]string{"instances": "instances.aggregatedList", "operations": "globalOperations.aggregatedList",
			"machineTypes": "machineTypes.aggregatedList"}[p[1]]
	case n >= 3 && p[0] == "zones" && p[2] == "machineTypes":
		return "machineTypes.list"
	case n == 3 && p[0] == "zones" && p[2] == "instances":
		return map[string]string{"GET": "instances.list", "POST": "instances.insert"}[verb]
	case n == 4 && p[0] == "zones" && p[2] == "instances":
		return map[string]string{"GET": "instances.get", "DELETE": "instances.delete"}[verb]
	case n == 3 && p[0] == "zones" && p[2] == "operations":
		return "zoneOperations.list"
	case n == 4 && p[0] == "zones" && p[2] == "operations":
		return "zoneOperations.get"
	case n == 5 && p[0] == "zones" && p[2] == "operations" && p[4] == "wait":
		return "zoneOperations.wait"
	case n == 4 && p[0] == "global" && p[1] == "images" && p[2] == "family":
		return "images.getFromFamily"
	case n == 3 && p[0] == "global" && p[1] == "images":
		return "images.get"
	case n == 2 && p[0] == "global" && p[1] == "firewalls":
		return map[string]string{"GET": "firewalls.list", "POST": "firewalls.insert"}[verb]
	case n == 3 && p[0] == "global" && p[1] == "firewalls":
		return map[string]string{"GET": "firewalls.get", "DELETE": "firewalls.delete"}[verb]
	case n == 3 && p[0] == "global" && p[1] == "operations":
		return "globalOperations.get"
	}
	return "unknown"
}

func (s *Server) dispatch(method, project string, p []string, r *http.Request) (proto.Message, *apiError) {
	q := r.URL.Query()
	if len(p) >= 2 && p[0] == "zones" {
		if _, ok := s.regions[p[1]]; !ok {
			return nil, notFound(fmt.Sprintf("projects/%s/zones/%s", project, p[1]))
		}
	}
	switch method {
	case "zones.list":
		return s.listZones()
	case "instances.aggregatedList":
		return s.aggregatedInstances(q)
	case "globalOperations.aggregatedList":
		return s.aggregatedOperations(q)
	case "machineTypes.aggregatedList":
		return s.aggregatedMachineTypes()
	case "machineTypes.list":
		if len(p) == 4 {
			return s.getMachineType(p[1], p[3])
		}
		return &computepb.MachineTypeList{Items: s.zoneMachineTypes(p[1]), Kind: proto.String("compute#machineTypeList")}, nil
	case "instances.list":
		return s.listInstances(p[1], q)
	case "instances.insert":
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, invalid("read body: %v", err)
		}
		return s.insert(p[1], body, q.Get("requestId"))
	case "instances.get":
		in, ok := s.instances[p[1]+"/"+p[3]]
		if !ok {
			return nil, notFound(fmt.Sprintf("projects/%s/zones/%s/instances/%s", project, p[1], p[3]))
		}
		return in, nil
	case "instances.delete":
		return s.delete(p[1], p[3], q.Get("requestId"))
	case "zoneOperations.list":
		return s.listOperations(p[1], q)
	case "zoneOperations.get", "zoneOperations.wait":
		op, ok := s.ops[p[1]+"/"+p[3]]
		if !ok {
			return nil, notFound(fmt.Sprintf("projects/%s/zones/%s/operations/%s", project, p[1], p[3]))
		}
		return op, nil
	case "firewalls.insert":
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, invalid("read body: %v", err)
		}
		return s.insertFirewall(body, q.Get("requestId"))
	case "firewalls.get":
		fw, ok := s.firewalls[p[2]]
		if !ok {
			return nil, notFound(fmt.Sprintf("projects/%s/global/firewalls/%s", project, p[2]))
		}
		return fw, nil
	case "firewalls.delete":
		return s.deleteFirewall(p[2], q.Get("requestId"))
	case "firewalls.list":
		return s.listFirewalls(q)
	case "globalOperations.get":
		op, ok := s.ops["global/"+p[2]]
		if !ok {
			return nil, notFound(fmt.Sprintf("projects/%s/global/operations/%s", project, p[2]))
		}
		return op, nil
	case "images.getFromFamily", "images.get":
		path := "projects/" + project + "/" + strings.Join(p, "/")
		if img, ok := s.families[path]; ok {
			return &computepb.Image{Name: proto.String(img[strings.LastIndex(img, "/")+1:]), Family: proto.String(p[len(p)-1]),
				SelfLink: proto.String(apiRoot + img), Status: proto.String("READY"), Kind: proto.String("compute#image")}, nil
		}
		if !s.images[path] {
			return nil, notFound(path)
		}
		return &computepb.Image{Name: proto.String(p[len(p)-1]), SelfLink: proto.String(apiRoot + path),
			Status: proto.String("READY"), Kind: proto.String("compute#image")}, nil
	}
	return nil, notFound(r.URL.Path)
}

func (s *Server) listZones() (proto.Message, *apiError) {
	out := &computepb.ZoneList{Kind: proto.String("compute#zoneList"), Id: proto.String("projects/" + s.project + "/zones"),
		SelfLink: proto.String(s.link("zones"))}
	for i, z := range s.zones {
		out.Items = append(out.Items, &computepb.Zone{
			Kind: proto.String("compute#zone"), Id: proto.Uint64(uint64(2000 + i)), Name: proto.String(z),
			Region: proto.String(s.link("regions/%s", s.regions[z])), Status: proto.String("UP"),
			SelfLink: proto.String(s.link("zones/%s", z)),
		})
	}
	return out, nil
}

func (s *Server) zoneMachineTypes(zone string) []*computepb.MachineType {
	var out []*computepb.MachineType
	for i, mt := range s.types {
		out = append(out, s.machineTypeProto(zone, i, mt))
	}
	return out
}

func (s *Server) getMachineType(zone, name string) (proto.Message, *apiError) {
	for i, mt := range s.types {
		if mt.Name == name {
			return s.machineTypeProto(zone, i, mt), nil
		}
	}
	return nil, notFound(fmt.Sprintf("projects/%s/zones/%s/machineTypes/%s", s.project, zone, name))
}

func (s *Server) aggregatedMachineTypes() (proto.Message, *apiError) {
	out := &computepb.MachineTypeAggregatedList{Kind: proto.String("compute#machineTypeAggregatedList"),
		Id: proto.String("projects/" + s.project + "/aggregated/machineTypes"), Items: map[string]*computepb.MachineTypesScopedList{}}
	for _, z := range s.zones {
		out.Items["zones/"+z] = &computepb.MachineTypesScopedList{MachineTypes: s.zoneMachineTypes(z)}
	}
	return out, nil
}

// page cuts keys to one page per maxResults/pageToken; the token is the
// offset of the next page.
func (s *Server) page(keys []string, q map[string][]string) ([]string, string, *apiError) {
	size := s.pageSize
	if v := first(q, "maxResults"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return nil, "", invalid("Invalid value for field 'maxResults': '%s'.", v)
		}
		size = min(size, n)
	}
	start := 0
	if tok := first(q, "pageToken"); tok != "" {
		n, err := strconv.Atoi(tok)
		if err != nil || n < 0 || n > len(keys) {
			return nil, "", invalid("Invalid value for field 'pageToken': '%s'.", tok)
		}
		start = n
	}
	end := min(start+size, len(keys))
	next := ""
	if end < len(keys) {
		next = strconv.Itoa(end)
	}
	return keys[start:end], next, nil
}

func first(q map[string][]string, k string) string {
	if v := q[k]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// pageOf lists the values of m at keys (in that order) that pass the
// request's filter, cut to one page, and the token of the next page (nil
// on the last).
func pageOf[V proto.Message](s *Server, m map[string]V, keys []string, q map[string][]string) ([]V, *string, *apiError) {
	f, err := parseFilter(first(q, "filter"))
	if err != nil {
		return nil, nil, invalid("Invalid value for field 'filter': %v", err)
	}
	var passed []string
	for _, k := range keys {
		if f.match(m[k]) {
			passed = append(passed, k)
		}
	}
	passed, next, aerr := s.page(passed, q)
	if aerr != nil {
		return nil, nil, aerr
	}
	var out []V
	for _, k := range passed {
		out = append(out, m[k])
	}
	var token *string
	if next != "" {
		token = proto.String(next)
	}
	return out, token, nil
}

// inZone keeps the keys ("zone/name") of one zone.
func inZone(keys []string, zone string) []string {
	var out []string
	for _, k := range keys {
		if strings.HasPrefix(k, zone+"/") {
			out = append(out, k)
		}
	}
	return out
}

func (s *Server) aggregatedInstances(q map[string][]string) (proto.Message, *apiError) {
	items, next, aerr := pageOf(s, s.instances, slices.Sorted(maps.Keys(s.instances)), q)
	if aerr != nil {
		return nil, aerr
	}
	out := &computepb.InstanceAggregatedList{Kind: proto.String("compute#instanceAggregatedList"),
		Id: proto.String("projects/" + s.project + "/aggregated/instances"), NextPageToken: next,
		SelfLink: proto.String(s.link("aggregated/instances")), Items: map[string]*computepb.InstancesScopedList{}}
	for _, z := range s.zones {
		out.Items["zones/"+z] = &computepb.InstancesScopedList{Warning: noResults(z)}
	}
	for _, in := range items {
		scoped := out.Items["zones/"+lastSegment(in.GetZone())]
		scoped.Warning = nil
		scoped.Instances = append(scoped.Instances, in)
	}
	return out, nil
}

// noResults is the warning the API puts on a scope with nothing in it.
func noResults(zone string) *computepb.Warning {
	return &computepb.Warning{Code: proto.String("NO_RESULTS_ON_PAGE"),
		Message: proto.String("There are no results for scope 'zones/" + zone + "' on this page."),
		Data:    []*computepb.Data{{Key: proto.String("scope"), Value: proto.String("zones/" + zone)}}}
}

func (s *Server) listInstances(zone string, q map[string][]string) (proto.Message, *apiError) {
	items, next, aerr := pageOf(s, s.instances, inZone(slices.Sorted(maps.Keys(s.instances)), zone), q)
	if aerr != nil {
		return nil, aerr
	}
	return &computepb.InstanceList{Kind: proto.String("compute#instanceList"),
		Id: proto.String("projects/" + s.project + "/zones/" + zone + "/instances"), Items: items, NextPageToken: next}, nil
}

func (s *Server) listOperations(zone string, q map[string][]string) (proto.Message, *apiError) {
	items, next, aerr := pageOf(s, s.ops, inZone(s.opOrder, zone), q)
	if aerr != nil {
		return nil, aerr
	}
	return &computepb.OperationList{Kind: proto.String("compute#operationList"),
		Id: proto.String("projects/" + s.project + "/zones/" + zone + "/operations"), Items: items, NextPageToken: next}, nil
}

func (s *Server) aggregatedOperations(q map[string][]string) (proto.Message, *apiError) {
	items, next, aerr := pageOf(s, s.ops, s.opOrder, q)
	if aerr != nil {
		return nil, aerr
	}
	out := &computepb.OperationAggregatedList{Kind: proto.String("compute#operationAggregatedList"),
		Id: proto.String("projects/" + s.project + "/aggregated/operations"), NextPageToken: next,
		Items: map[string]*computepb.OperationsScopedList{}}
	for _, z := range s.zones {
		out.Items["zones/"+z] = &computepb.OperationsScopedList{Warning: noResults(z)}
	}
	out.Items["global"] = &computepb.OperationsScopedList{Warning: &computepb.Warning{Code: proto.String("NO_RESULTS_ON_PAGE"),
		Message: proto.String("There are no results for scope 'global' on this page.")}}
	for _, op := range items {
		scope := "global"
		if op.GetZone() != "" {
			scope = "zones/" + lastSegment(op.GetZone())
		}
		scoped := out.Items[scope]
		scoped.Warning = nil
		scoped.Operations = append(scoped.Operations, op)
	}
	return out, nil
}

// writeError answers in the format googleapi.CheckResponse parses.
func writeError(w http.ResponseWriter, e *apiError) {
	body := map[string]any{"error": map[string]any{
		"code":    e.status,
		"message": e.message,
		"errors":  []map[string]string{{"message": e.message, "domain": "global", "reason": e.reason}},
	}}
	b, _ := json.Marshal(body)
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(e.status)
	w.Write(b)
}
