// Command sortie-sync moves a task's buckets: on a node, the node agent
// runs it to download them before setup and to upload what changed
// (package sortie/provision/bucket); on the controller's machine, sortie
// runs it to check, create, fill and delete buckets, so that neither the
// agent nor the CLI links a cloud SDK. Credentials and endpoints are the
// stores' standard ones (AWS_ENDPOINT_URL_S3, STORAGE_EMULATOR_HOST).
//
//	sortie-sync down DIR | up DIR
//	sortie-sync check  -store S -bucket B [-create]
//	sortie-sync ensure -store S -bucket B [-prefix P] [-create [-region R]] [-source PATH | -each PATH...]
//	sortie-sync delete -store S -bucket B
//	sortie-sync region -store S -bucket B
//	sortie-sync newest -store S -bucket B [-prefix P]
//	sortie-sync access -store gcs [-project P]
//
// newest prints the newest object under the prefix as one JSON line,
// {"key": K, "modified": RFC 3339}, or nothing when there is none: the
// controller reads a task's last checkpoint with it.
//
// -project names the Google Cloud project GCS buckets are made in (and
// access asks about); without it, the environment's.
//
// It must not import sortie/controller/... or sortie/schema: the sync program
// is copied to nodes and runs alone.
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"sortie/provision/bucket"
	"sortie/provision/node/agent"
)

// Exit codes the controller tells apart.
const (
	exitDenied  = 3 // the bucket is there and these credentials cannot read it
	exitMissing = 4 // the bucket is not there and may not be created
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:]))
}

const usage = `usage: sortie-sync down DIR | up DIR
       sortie-sync check  -store S -bucket B [-create]
       sortie-sync ensure -store S -bucket B [-prefix P] [-create [-region R]] [-source PATH | -each PATH...]
       sortie-sync delete -store S -bucket B
       sortie-sync region -store S -bucket B
       sortie-sync newest -store S -bucket B [-prefix P]
       sortie-sync access -store gcs [-project P]`

func run(ctx context.Context, args []string) int {
	if len(args) < 1 {
		fmt.Fprintln(os.Stderr, usage)
		return 2
	}
	switch args[0] {
	case "down", "up":
		if len(args) != 2 {
			fmt.Fprintln(os.Stderr, usage)
			return 2
		}
		n := bucket.Node{Dir: args[1], Open: bucket.Open, Home: cmp.Or(os.Getenv(agent.HomeEnv), os.Getenv("HOME"))}
		op := n.Down
		if args[0] == "up" {
			op = n.Up
		}
		if err := op(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "sortie-sync %s: %v\n", args[0], err)
			return 1
		}
		return 0
	case "check", "ensure", "delete", "region", "newest", "access":
		return bucketOp(ctx, args[0], args[1:])
	}
	fmt.Fprintln(os.Stderr, usage)
	return 2
}

func bucketOp(ctx context.Context, op string, args []string) int {
	fs := flag.NewFlagSet(op, flag.ContinueOnError)
	store := fs.String("store", "", "s3 or gcs")
	name := fs.String("bucket", "", "the bucket")
	prefix := fs.String("prefix", "", "the objects' prefix")
	create := fs.Bool("create", false, "a missing bucket is created (check: may be)")
	source := fs.String("source", "", "a local path uploaded under the prefix, content-addressed")
	var each []string
	fs.Func("each", "a local path uploaded under its base name below the prefix, content-addressed (repeatable: several sources)", func(s string) error {
		each = append(each, s)
		return nil
	})
	region := fs.String("region", "", "where a missing bucket is created (a store with regions); default the store's")
	project := fs.String("project", "", "gcs: the Google Cloud project buckets are made in")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 || *store == "" || (*name == "") != (op == "access") {
		fmt.Fprintln(os.Stderr, usage)
		return 2
	}
	st, err := bucket.Open(ctx, *store)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sortie-sync:", err)
		return 1
	}
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "sortie-sync %s: %v\n", op, err)
		if errors.Is(err, bucket.ErrDenied) {
			return exitDenied
		}
		return 1
	}
	if g, ok := st.(*bucket.GCS); ok && *project != "" {
		g.Project = *project
	}
	if op == "access" {
		a, ok := st.(interface {
			Access(context.Context) (string, error)
		})
		if !ok {
			fmt.Fprintf(os.Stderr, "sortie-sync access: store %s: its access is checked by sortie check's own section\n", *store)
			return 2
		}
		line, err := a.Access(ctx)
		if err != nil {
			return fail(err)
		}
		fmt.Println(line)
		return 0
	}
	if op == "region" {
		return printRegion(ctx, st, *name, fail)
	}
	if op == "newest" {
		o, ok, err := bucket.Newest(ctx, st, *name, *prefix)
		if err != nil {
			return fail(err)
		}
		if ok {
			line, _ := json.Marshal(struct {
				Key      string    `json:"key"`
				Modified time.Time `json:"modified"`
			}{o.Key, o.Modified.UTC()})
			fmt.Println(string(line))
		}
		return 0
	}
	if op == "delete" {
		ok, err := st.Exists(ctx, *name)
		if err != nil {
			return fail(err)
		}
		if ok {
			if err := st.Delete(ctx, *name); err != nil {
				return fail(err)
			}
		}
		return 0
	}
	ok, err := st.Exists(ctx, *name)
	if err != nil {
		return fail(err)
	}
	if !ok && !*create {
		fmt.Fprintf(os.Stderr, "sortie-sync %s: bucket %s does not exist\n", op, *name)
		return exitMissing
	}
	if ok {
		// Exists answers HEAD, which a policy may allow where a listing
		// is refused: a bucket sortie must read is listed once.
		if _, err := st.List(ctx, *name, *prefix+bucket.MarkerPrefix); err != nil {
			return fail(err)
		}
	}
	if op == "check" {
		return 0
	}
	if !ok {
		create := st.Create
		if rc, isRegional := st.(regionalCreator); isRegional && *region != "" {
			create = func(ctx context.Context, b string) error { return rc.CreateIn(ctx, b, *region) }
		}
		if err := create(ctx, *name); err != nil {
			return fail(err)
		}
	}
	if *source != "" {
		m := bucket.Mount{Store: st, Bucket: *name, Prefix: *prefix}
		up, res, err := m.UploadSource(ctx, *source)
		if err != nil {
			return fail(err)
		}
		if up {
			fmt.Printf("uploaded %s: %d files, %d bytes\n", *source, res.Files, res.Bytes)
		} else {
			fmt.Printf("source %s: the bucket holds it already\n", *source)
		}
	}
	if len(each) > 0 {
		m := bucket.Mount{Store: st, Bucket: *name, Prefix: *prefix}
		up, res, err := m.UploadEach(ctx, each)
		if err != nil {
			return fail(err)
		}
		fmt.Printf("uploaded %d of %d sources: %d files, %d bytes\n", up, len(each), res.Files, res.Bytes)
	}
	return 0
}

// regionalCreator is a store whose buckets are made in a region.
type regionalCreator interface {
	CreateIn(ctx context.Context, bucket, region string) error
}

// regioner is a store that can tell where a bucket lives.
type regioner interface {
	Region(ctx context.Context, bucket string) (region string, ok bool, err error)
}

// printRegion prints the bucket's region, for the dry run's warning of a
// bucket far from the cluster; it prints nothing for a store that has no
// regions.
func printRegion(ctx context.Context, st bucket.Store, name string, fail func(error) int) int {
	r, ok := st.(regioner)
	if !ok {
		return 0
	}
	region, found, err := r.Region(ctx, name)
	if err != nil {
		return fail(err)
	}
	if !found {
		fmt.Fprintf(os.Stderr, "sortie-sync region: bucket %s does not exist\n", name)
		return exitMissing
	}
	fmt.Println(region)
	return 0
}
