package bucket

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"

	"golang.org/x/oauth2/google"
	"google.golang.org/api/iterator"
)

// gcsBucketPermissions are what a storage mount's bucket needs of the
// project beyond its objects: sortie makes a missing bucket, and deletes
// a persistent: false one when the job ends.
var gcsBucketPermissions = []string{"storage.buckets.create", "storage.buckets.delete"}

// DefaultResourceManager is the Resource Manager API, which answers which
// of a project's permissions the caller holds.
const DefaultResourceManager = "https://cloudresourcemanager.googleapis.com"

// Access says what these credentials may do with the project's buckets,
// for sortie check: a listing of its buckets is tried, then the Resource
// Manager is asked whether they may create and delete buckets. Against an
// emulator (STORAGE_EMULATOR_HOST, and no ResourceManager set), which has
// no IAM, only the listing is tried. A listing refused is ErrDenied.
func (g *GCS) Access(ctx context.Context) (string, error) {
	project, err := g.ProjectID(ctx)
	if err != nil {
		return "", err
	}
	it := g.Client.Buckets(ctx, project)
	it.PageInfo().MaxSize = 1
	if _, err := it.Next(); err != nil && !errors.Is(err, iterator.Done) {
		return "", gcsError("list the buckets of project "+project, err)
	}
	rm := g.ResourceManager
	if rm == "" {
		if host := os.Getenv("STORAGE_EMULATOR_HOST"); host != "" {
			return fmt.Sprintf("project %s: buckets listed at the emulator %s (it has no IAM to ask whether they may be created)", project, host), nil
		}
		rm = DefaultResourceManager
	}
	missing, err := g.missingPermissions(ctx, rm, project)
	if err != nil {
		return fmt.Sprintf("project %s: buckets listed; whether they may be created is unknown (%v)", project, err), nil
	}
	if len(missing) > 0 {
		return fmt.Sprintf("project %s: buckets listed; lacks %s, which a storage mount whose bucket is new (or persistent: false) needs", project, strings.Join(missing, ", ")), nil
	}
	return fmt.Sprintf("project %s: buckets listed, created and deleted", project), nil
}

// missingPermissions asks projects.testIamPermissions which of the bucket
// permissions the caller lacks on project.
func (g *GCS) missingPermissions(ctx context.Context, rm, project string) ([]string, error) {
	hc := g.HTTPClient
	if hc == nil {
		var err error
		if hc, err = google.DefaultClient(ctx, "https://www.googleapis.com/auth/cloud-platform"); err != nil {
			return nil, err
		}
	}
	body, _ := json.Marshal(map[string][]string{"permissions": gcsBucketPermissions})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(rm, "/")+"/v1/projects/"+project+":testIamPermissions", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("testIamPermissions on project %s: %s", project, resp.Status)
	}
	var out struct {
		Permissions []string `json:"permissions"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("testIamPermissions on project %s: %w", project, err)
	}
	var missing []string
	for _, p := range gcsBucketPermissions {
		if !slices.Contains(out.Permissions, p) {
			missing = append(missing, p)
		}
	}
	return missing, nil
}
