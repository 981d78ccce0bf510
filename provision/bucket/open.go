package bucket

import (
	"context"
	"fmt"
)

// Open opens a store by its name in a task file.
func Open(ctx context.Context, store string) (Store, error) {
	switch store {
	case "s3":
		return NewS3(ctx)
	case "gcs":
		return NewGCS(ctx)
	}
	return nil, fmt.Errorf("store %q: not one sortie syncs; use s3 or gcs", store)
}
