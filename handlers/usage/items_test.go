package usage

import (
	"strings"
	"testing"
)

// TestDataItemsCountsTopLevelData: the elements of the top-level "data" array are counted
// however the answer is cut into writes, and nothing else is: a nested "data", a "data" inside
// a string, an escaped key, objects, strings, numbers and nulls as elements.
func TestDataItemsCountsTopLevelData(t *testing.T) {
	big := strings.Repeat("QUJD", 50_000)
	for _, tc := range []struct {
		body string
		want int64
		seen bool
	}{
		{`{"created":1,"data":[{"url":"https://x/1.png"},{"url":"https://x/2.png"}]}`, 2, true},
		{`{"data":[{"b64_json":"` + big + `"},{"b64_json":"` + big + `"},{"b64_json":"` + big + `"}],"usage":{"total_tokens":3}}`, 3, true},
		{`{"data": [ ]}`, 0, true},
		{`{"data":[]}`, 0, true},
		{` { "data" : [ "a,b" , 2 , null , [1,2] , {"data":[1,2,3]} ] } `, 5, true},
		{`{"meta":{"data":[1,2,3]},"note":"\"data\":[1,2]","data":[{}]}`, 1, true},
		{`{"d\u0061ta":[1,2],"data":[1]}`, 1, true},
		{`{"error":{"message":"no"}}`, 0, false},
		{`[{"data":[1]}]`, 0, false},
	} {
		for _, chunk := range []int{1, 3, 7, len(tc.body)} {
			var c DataItems
			for i := 0; i < len(tc.body); i += chunk {
				c.Write([]byte(tc.body[i:min(i+chunk, len(tc.body))]))
			}
			if n, seen := c.Count(); n != tc.want || seen != tc.seen {
				t.Errorf("%.60s… in writes of %d: %d items (array seen %v), want %d (%v)", tc.body, chunk, n, seen, tc.want, tc.seen)
			}
		}
	}
}

// TestDataItemsReadsReportedQualityAndSize: the top-level "quality" and "size" strings of an
// image answer are kept, the last of each, however the answer is cut into writes; nested ones,
// ones inside strings, non-strings and escaped names are not.
func TestDataItemsReadsReportedQualityAndSize(t *testing.T) {
	big := strings.Repeat("QUJD", 50_000)
	for _, tc := range []struct {
		body, quality, size string
		n                   int64
	}{
		{`{"created":1,"background":"opaque","data":[{"b64_json":"` + big + `"}],"output_format":"png","quality":"high","size":"1024x1536","usage":{"input_tokens":50}}`, "high", "1024x1536", 1},
		{` { "size" : "1536x1024" , "quality" : "low" , "data" : [ {"quality":"high"} , {} ] } `, "low", "1536x1024", 2},
		{`{"data":[{"size":"1x1","quality":"high"}],"meta":{"quality":"high"},"note":"\"quality\":\"high\""}`, "", "", 1},
		{`{"quality":1,"size":null,"data":[]}`, "", "", 0},
		{`{"qu\u0061lity":"high","size":"1024x1024","data":[{}]}`, "", "1024x1024", 1},
		{`{"quality":"h\u0069gh","size":"` + strings.Repeat("9", 40) + `","data":[{}]}`, "", "", 1},
		{`{"quality":"low","quality":"high","data":[{}]}`, "high", "", 1},
	} {
		for _, chunk := range []int{1, 3, 7, len(tc.body)} {
			var c DataItems
			for i := 0; i < len(tc.body); i += chunk {
				c.Write([]byte(tc.body[i:min(i+chunk, len(tc.body))]))
			}
			size, quality := c.Reported()
			if n, _ := c.Count(); quality != tc.quality || size != tc.size || n != tc.n {
				t.Errorf("%.60s… in writes of %d: quality %q size %q, %d items; want %q %q %d", tc.body, chunk, quality, size, n, tc.quality, tc.size, tc.n)
			}
		}
	}
}

func FuzzDataItems(f *testing.F) {
	f.Add([]byte(`{"data":[{}],"quality":"high","size":"1024x1024"}`))
	f.Add([]byte(`{"quality":"h\u0069gh","data":[1,[2]],"size":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var c DataItems
		c.Write(b)
		c.Write(b)
		if n, _ := c.Count(); n < 0 {
			t.Fatalf("count %d", n)
		}
		if size, quality := c.Reported(); len(size) > maxReported || len(quality) > maxReported {
			t.Fatalf("reported %q, %q: longer than kept", size, quality)
		}
	})
}
