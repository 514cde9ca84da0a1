package integration

import "testing"

// TestInstancesSharePresignRate presigns uploads (real S3: versitygw) through three gateways
// that share one Redis, with the upload block's rate_limit of 4 per minute: spec §8's limit is
// per key, so the three together allow a key 4 presigns, not 4 each; another key has its own 4.
func TestInstancesSharePresignRate(t *testing.T) {
	t.Parallel()
	s3 := startS3(t)
	s3.createBucket(t, "shared-media", true)
	c := startCluster(t, 3, clusterOptions{gatewayOptions: uploadBlock(s3, "shared-media", "rate_limit 4 1m")})
	allowed, limited := raceStatuses(12, func(i int) (response, error) {
		return send("POST", c.instances[i%3].base+"/v1/upload/presign", "mg-alice", map[string]string{"filename": "a.png", "content_type": "image/png"})
	})
	if allowed != 4 || limited != 8 {
		t.Fatalf("allowed %d, limited %d; want 4 and 8", allowed, limited)
	}
	if r, err := send("POST", c.instances[2].base+"/v1/upload/presign", "mg-bob", map[string]string{"filename": "b.png"}); err != nil || r.status != 200 {
		t.Fatalf("another key's presign: %v %+v", err, r)
	}
}
