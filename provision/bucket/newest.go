package bucket

import (
	"context"
	"strings"
)

// Newest returns the newest object under prefix by last-modified time
// (of two alike, the greater key), leaving out sortie's own markers
// (MarkerPrefix): where a task keeps its checkpoints, the last one it
// saved. ok is false when there is none.
func Newest(ctx context.Context, st Store, bucket, prefix string) (o Object, ok bool, err error) {
	objs, err := st.List(ctx, bucket, prefix)
	if err != nil {
		return Object{}, false, err
	}
	for _, obj := range objs {
		if strings.HasPrefix(strings.TrimPrefix(obj.Key, prefix), MarkerPrefix) {
			continue
		}
		if !ok || obj.Modified.After(o.Modified) || obj.Modified.Equal(o.Modified) && obj.Key > o.Key {
			o, ok = obj, true
		}
	}
	return o, ok, nil
}
