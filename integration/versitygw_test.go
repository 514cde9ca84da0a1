package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// s3Server is a real S3 server (versitygw with a posix backend) on loopback.
type s3Server struct {
	endpoint, access, secret string
	client                   *s3.Client
}

var (
	vgwOnce sync.Once
	vgwBin  string
	vgwErr  error
)

// versitygwBinary builds versitygw from the tools module (pinned in tools/go.mod) once per machine
// and tools version; later runs reuse the binary.
func versitygwBinary(t *testing.T) string {
	t.Helper()
	bin, err := buildVersitygw()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// buildVersitygw builds versitygw (or finds it built) the first time it is called; later calls
// wait for that build.
func buildVersitygw() (string, error) {
	vgwOnce.Do(func() {
		toolsDir := filepath.Join(repoDir(), "tools")
		sum, err := os.ReadFile(filepath.Join(toolsDir, "go.sum"))
		if err != nil {
			vgwErr = err
			return
		}
		h := sha256.Sum256(sum)
		cache, err := os.UserCacheDir()
		if err != nil {
			cache = os.TempDir()
		}
		vgwBin = filepath.Join(cache, "mediagw-test-tools", "versitygw-"+hex.EncodeToString(h[:6]))
		if _, err := os.Stat(vgwBin); err == nil {
			return
		}
		tmp := vgwBin + fmt.Sprintf(".%d.tmp", os.Getpid())
		if vgwErr = goBuild(toolsDir, tmp, "github.com/versity/versitygw/cmd/versitygw"); vgwErr == nil {
			vgwErr = os.Rename(tmp, vgwBin)
		}
	})
	return vgwBin, vgwErr
}

// startS3 runs versitygw on a loopback port with a fresh posix root, stopped when the test ends.
func startS3(t *testing.T) *s3Server {
	t.Helper()
	srv := &s3Server{access: "mediagwtest", secret: "mediagw-test-secret-key"}
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	srv.endpoint = "http://" + addr
	cmd := exec.Command(versitygwBinary(t), "--access", srv.access, "--secret", srv.secret,
		"--port", addr, "--quiet", "posix", t.TempDir())
	out, err := os.Create(filepath.Join(t.TempDir(), "versitygw.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); out.Close() })
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("versitygw did not start on %s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	srv.client = s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.endpoint),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider(srv.access, srv.secret, ""),
	})
	return srv
}

// createBucket makes a bucket; a public one gets a policy that lets anyone read its objects.
func (s *s3Server) createBucket(t *testing.T, name string, public bool) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	if !public {
		return
	}
	policy := fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::%s/*"]}]}`, name)
	if _, err := s.client.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(name), Policy: aws.String(policy)}); err != nil {
		t.Fatalf("bucket policy on %s: %v", name, err)
	}
}
