// Command watchfleet measures the task watcher of several gateway instances sharing one Redis
// store: N instance processes (this program started again with -instance, each a watcher with
// its own Redis client, as in a gateway) keep many unfinished simulator tasks refreshed. It
// reports the task reads per interval against the tasks due, the time between two upstream
// reads of a task (percentiles), and the upstream calls per second against what reading one
// task at a time would need (tasks ÷ interval).
//
//	go run ./bench/watchfleet -tasks 100000 -instances 3 -interval 5s -duration 90s
//
// redis-server is started on loopback by internal/testredis (installed with apt-get when
// missing), with appendfsync everysec for the setup's speed: the watcher's work, not durability,
// is measured. The simulator upstream runs in this process. Every run is bounded by -duration.
//
// It also reports the Redis commands per second and the CPU time of redis-server (INFO), of the
// instance processes (/proc) and of this process (the simulator upstream), for the whole run
// and for the steady state: from an interval after every task had its first read (which writes
// the task's first answer, once). -kill-after SIGKILLs instance 0 at that time: the others must
// take its shards over (it prints the time from the kill to the next read of each task that
// instance 0 read last). -join-after starts the last instance only at that time: the others must
// hand it its share.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/rueidis"

	"github.com/mediagw/mediagw/bench/mainenv"
	"github.com/mediagw/mediagw/handlers/simulator"
	"github.com/mediagw/mediagw/internal/testredis"
	"github.com/mediagw/mediagw/storage"
)

func main() {
	tasks := flag.Int("tasks", 20000, "unfinished tasks to watch")
	instances := flag.Int("instances", 3, "watchers (gateway instances) sharing the store")
	interval := flag.Duration("interval", 5*time.Second, "watcher interval")
	rps := flag.Float64("rps", 200, "each watcher's max upstream requests per second")
	concurrency := flag.Int("concurrency", 8, "each watcher's concurrency")
	duration := flag.Duration("duration", 30*time.Second, "how long to watch")
	batch := flag.Bool("batch", true, "let the simulator's list filter by id (false: one read per task)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of instance 1's whole run to this file")
	killAfter := flag.Duration("kill-after", 0, "SIGKILL instance 0 at this time (0: never)")
	joinAfter := flag.Duration("join-after", 0, "start the last instance only at this time (0: with the others)")
	protocolList := flag.String("protocols", "ark", "the tasks' protocols, comma-separated (ark, dashscope, kling): the tasks are spread evenly over them, one upstream each")
	upstreamRPS := flag.Float64("upstream-rps", 0, "each upstream's own max_rps in each instance (0: unbounded)")
	var inst instanceFlags
	inst.register()
	flag.Parse()
	if inst.owner != "" {
		runInstance(inst, *interval, *rps, *concurrency)
		return
	}

	env := mainenv.New("bench-watchfleet-")
	defer env.Close()
	srv := testredis.Start(env, testredis.Options{Fsync: "everysec"})

	protos := strings.Split(*protocolList, ",")
	for _, p := range protos {
		if !slices.Contains(fleetProtocols, p) {
			env.Fatalf("unknown protocol %q: use %s", p, strings.Join(fleetProtocols, ", "))
		}
	}
	sim := simulator.New()
	sim.QueuedFor = time.Hour
	sim.KlingAccessKey, sim.KlingSecretKey = klingAccessKey, klingSecretKey
	calls := newUpstreamCalls()
	var (
		mu           sync.Mutex
		reads        = map[string][]read{}
		single, list atomic.Int64
	)
	// Each instance calls the upstream under its own path prefix (/i<n>), so that every read is
	// recorded with the instance that made it.
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		by := -1
		if rest, ok := strings.CutPrefix(r.URL.Path, "/i"); ok {
			n, path, _ := strings.Cut(rest, "/")
			by, _ = strconv.Atoi(n)
			r.URL.Path = "/" + path
		}
		if r.Method == http.MethodGet {
			at := read{at: time.Now(), by: by}
			if proto, id, ok := adaptedRead(r.URL.Path); ok {
				single.Add(1)
				calls.add(by, proto, at.at)
				mu.Lock()
				reads[id] = append(reads[id], at)
				mu.Unlock()
				sim.ServeHTTP(w, r)
				return
			}
			calls.add(by, "ark", at.at)
			_, rest, _ := strings.Cut(r.URL.Path, "/contents/generations/tasks")
			mu.Lock()
			if id := strings.Trim(rest, "/"); id != "" {
				single.Add(1)
				reads[id] = append(reads[id], at)
			} else {
				list.Add(1)
				for _, id := range r.URL.Query()["filter.task_ids"] {
					reads[id] = append(reads[id], at)
				}
			}
			mu.Unlock()
			if rest == "" && !*batch {
				http.NotFound(w, r)
				return
			}
		}
		sim.ServeHTTP(w, r)
	}))
	defer upstream.Close()
	base := func(i int) string { return fmt.Sprintf("%s/i%d", upstream.URL, i) }

	ctx := context.Background()
	open := func() *storage.Redis {
		s, err := storage.OpenRedis(ctx, storage.RedisOptions{URL: srv.URL(), KeyPrefix: "fleet"})
		if err != nil {
			env.Fatalf("%v", err)
		}
		return s
	}
	setup := open()
	fmt.Printf("creating %d tasks…\n", *tasks)
	var wg sync.WaitGroup
	ids := make(chan int)
	klingCred, err := klingCredential()
	if err != nil {
		env.Fatalf("%v", err)
	}
	for range 32 {
		wg.Go(func() {
			for i := range ids {
				now := time.Now()
				t := storage.Task{Kind: storage.KindVideo, Account: "a", Status: "queued",
					CreatedAt: now.Unix(), UpdatedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix()}
				if err := createUpstream(sim, protos[i%len(protos)], i, &t, klingCred); err != nil {
					env.Fatalf("%v", err)
				}
				if _, err := setup.CreateTask(ctx, t); err != nil {
					env.Fatalf("%v", err)
				}
			}
		})
	}
	for i := range *tasks {
		ids <- i
	}
	close(ids)
	wg.Wait()
	setup.Close()

	self, err := os.Executable()
	if err != nil {
		env.Fatalf("%v", err)
	}
	admin := redisAdmin(env, srv.URL())
	defer admin.Close()
	redisBefore := redisInfo(env, admin)
	cpuBefore := processCPU()
	start := time.Now()
	procs := make([]*exec.Cmd, *instances)
	var procsMu sync.Mutex // the joining instance starts while the figures are read
	startInstance := func(i int) {
		args := []string{"-instance", fmt.Sprint("instance-", i), "-redis", srv.URL(), "-upstream", base(i),
			"-interval", interval.String(), "-rps", fmt.Sprint(*rps), "-concurrency", fmt.Sprint(*concurrency),
			"-instance-upstream-rps", fmt.Sprint(*upstreamRPS)}
		if i == 1 && *cpuProfile != "" {
			args = append(args, "-instance-cpuprofile", *cpuProfile)
		}
		cmd := exec.Command(self, args...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Start(); err != nil {
			env.Fatalf("starting an instance: %v", err)
		}
		procsMu.Lock()
		procs[i] = cmd
		procsMu.Unlock()
		env.Cleanup(func() {
			if cmd.ProcessState == nil {
				cmd.Process.Kill() // a bench that failed half-way leaves no instance behind
				cmd.Wait()
			}
		})
	}
	joining := -1
	if *joinAfter > 0 && *joinAfter < *duration && *instances > 1 {
		joining = *instances - 1
	}
	for i := range *instances {
		if i != joining {
			startInstance(i)
		}
	}
	started := func() []*exec.Cmd {
		procsMu.Lock()
		defer procsMu.Unlock()
		var out []*exec.Cmd
		for _, cmd := range procs {
			if cmd != nil {
				out = append(out, cmd)
			}
		}
		return out
	}
	// The steady state is measured from an interval after every task had its first read, which
	// stores the upstream's first answer (one write per task, once; the gateway's create stores
	// none).
	var (
		warmAt    time.Time
		redisWarm redisCounters
		cpuWarm   time.Duration
	)
	watching := make(chan struct{}) // closed when the watchers stop
	warmed := make(chan struct{})
	go func() {
		defer close(warmed)
		for {
			mu.Lock()
			all := len(reads) == *tasks
			mu.Unlock()
			if all {
				break
			}
			select {
			case <-watching:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
		select {
		case <-watching:
			return
		case <-time.After(*interval):
		}
		warmAt, redisWarm, cpuWarm = time.Now(), redisInfo(env, admin), instancesCPU(started())
	}()
	// The events of the run, in time order: the SIGKILL of instance 0, the start of the last one.
	type event struct {
		at time.Duration
		do func()
	}
	var events []event
	killed := false
	var killedAt time.Time
	if *killAfter > 0 && *killAfter < *duration {
		events = append(events, event{*killAfter, func() {
			if err := procs[0].Process.Kill(); err != nil {
				env.Fatalf("SIGKILL: %v", err)
			}
			killed, killedAt = true, time.Now()
			fmt.Printf("instance-0 SIGKILLed at %s\n", killAfter)
		}})
	}
	if joining >= 0 {
		events = append(events, event{*joinAfter, func() {
			startInstance(joining)
			fmt.Printf("instance-%d joined at %s\n", joining, joinAfter)
		}})
	}
	slices.SortFunc(events, func(a, b event) int { return int(a.at - b.at) })
	for _, ev := range events {
		time.Sleep(time.Until(start.Add(ev.at)))
		ev.do()
	}
	time.Sleep(time.Until(start.Add(*duration)))
	end := time.Now()
	close(watching)
	<-warmed
	cpuEnd := instancesCPU(procs)
	redisAfter := redisInfo(env, admin)
	for i, cmd := range procs {
		if i == 0 && killed {
			continue
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			env.Fatalf("stopping an instance: %v", err)
		}
	}
	for i, cmd := range procs {
		if err := cmd.Wait(); err != nil && !(i == 0 && killed) {
			env.Fatalf("instance-%d: %v", i, err)
		}
	}
	cpu := cpuEnd
	benchCPU := processCPU() - cpuBefore

	var gaps, first []time.Duration
	total, never := 0, 0
	perInterval := map[int]int{} // interval number → task reads in it
	// times are the reads of each task in time order; tooSoon counts the reads that came within
	// 0.9 interval of the task's previous read (none should), by the pair of instances.
	times := map[string][]time.Time{}
	tooSoon := map[string]int{}
	var tooSoonAt, tooSoonGap []time.Duration // when they came, from the start, and how soon
	// takeover: for each task instance 0 read last before it was killed, the time from the kill to
	// the task's next read (by a survivor).
	var takeover []time.Duration
	orphans := 0
	mu.Lock()
	for id, rs := range reads {
		slices.SortFunc(rs, func(a, b read) int { return a.at.Compare(b.at) })
		if killed {
			if i, _ := slices.BinarySearchFunc(rs, killedAt, func(r read, t time.Time) int { return r.at.Compare(t) }); i > 0 && rs[i-1].by == 0 {
				if i < len(rs) {
					takeover = append(takeover, rs[i].at.Sub(killedAt))
				} else {
					orphans++
				}
			}
		}
		ts := make([]time.Time, len(rs))
		for i, r := range rs {
			ts[i] = r.at
			if i > 0 && r.at.Sub(rs[i-1].at) < *interval*9/10 {
				tooSoon[fmt.Sprintf("instance-%d then instance-%d", rs[i-1].by, r.by)]++
				tooSoonAt = append(tooSoonAt, r.at.Sub(start))
				tooSoonGap = append(tooSoonGap, r.at.Sub(rs[i-1].at))
			}
		}
		times[id] = ts
	}
	never = *tasks - len(reads)
	mu.Unlock()
	for _, ts := range times {
		first = append(first, ts[0].Sub(start))
		for i, t := range ts {
			if i > 0 {
				gaps = append(gaps, t.Sub(ts[i-1]))
			}
			perInterval[int(t.Sub(start)/(*interval))]++
		}
		gaps = append(gaps, end.Sub(ts[len(ts)-1]))
		total += len(ts)
	}
	slices.Sort(gaps)
	slices.Sort(first)
	p := func(d []time.Duration, q float64) time.Duration {
		if len(d) == 0 {
			return 0
		}
		return d[int(q*float64(len(d)-1))].Round(time.Millisecond)
	}
	secs := end.Sub(start).Seconds()
	upstreamCalls := single.Load() + list.Load()
	fmt.Printf("tasks %d, instances %d, interval %s, max_rps %.0f and concurrency %d each, batch %v, watched %s\n",
		*tasks, *instances, *interval, *rps, *concurrency, *batch, duration.String())
	fmt.Printf("task reads %d (%.0f/s); upstream calls %.0f/s (%d list, %d single); one read per task would need %.0f/s; tasks never read %d\n",
		total, float64(total)/secs, float64(upstreamCalls)/secs, list.Load(), single.Load(), float64(*tasks)/interval.Seconds(), never)
	if len(protos) > 1 || *upstreamRPS > 0 {
		calls.report(protos, *instances, *upstreamRPS, warmAt, end)
	}
	var rounds []string
	for i := range int(secs / interval.Seconds()) {
		rounds = append(rounds, fmt.Sprint(perInterval[i]))
	}
	fmt.Printf("task reads per interval (%d due in each): %s\n", *tasks, strings.Join(rounds, " "))
	fmt.Printf("first read after start: p50 %s  p99 %s  max %s\n", p(first, 0.5), p(first, 0.99), p(first, 1))
	if len(gaps) > 0 {
		fmt.Printf("gap between reads of a task (and from its last read to the end): p50 %s  p99 %s  p99.9 %s  max %s  (max / interval = %.2f)\n",
			p(gaps, 0.5), p(gaps, 0.99), p(gaps, 0.999), p(gaps, 1), gaps[len(gaps)-1].Seconds()/interval.Seconds())
	}
	if killed {
		slices.Sort(takeover)
		iv := func(d time.Duration) float64 { return d.Seconds() / interval.Seconds() }
		if len(takeover) > 0 {
			fmt.Printf("kill → next read of each task instance-0 read last (%d tasks; %d never read again): first %s (%.2f interval)  p50 %s  p99 %s  max %s (%.2f interval)\n",
				len(takeover), orphans, p(takeover, 0), iv(takeover[0]), p(takeover, 0.5), p(takeover, 0.99), p(takeover, 1), iv(takeover[len(takeover)-1]))
		} else {
			fmt.Printf("kill → next read: instance-0 had read no task last; %d never read again\n", orphans)
		}
	}
	cmds := redisAfter.commands - redisBefore.commands
	if len(tooSoon) == 0 {
		fmt.Println("reads within 0.9 interval of the task's previous read: none")
	} else {
		slices.Sort(tooSoonAt)
		slices.Sort(tooSoonGap)
		fmt.Printf("reads within 0.9 interval of the task's previous read: %v, from %s to %s after the start, %s to %s after the previous read\n",
			tooSoon, tooSoonAt[0].Round(time.Millisecond), tooSoonAt[len(tooSoonAt)-1].Round(time.Millisecond),
			tooSoonGap[0].Round(time.Millisecond), tooSoonGap[len(tooSoonGap)-1].Round(time.Millisecond))
	}
	if warmAt.IsZero() {
		fmt.Println("steady state: not reached (some task had not been read once an interval before the end)")
	} else {
		var steady []time.Duration
		warmReads := 0
		for _, ts := range times {
			for i, t := range ts {
				if t.Before(warmAt) {
					continue
				}
				warmReads++
				if i > 0 {
					steady = append(steady, t.Sub(ts[i-1]))
				}
			}
			steady = append(steady, end.Sub(ts[len(ts)-1]))
		}
		slices.Sort(steady)
		if len(protos) > 1 {
			gapsByProtocol(times, warmAt, end, *interval)
		}
		ws := end.Sub(warmAt).Seconds()
		wc := redisAfter.commands - redisWarm.commands
		wcpu := cpu - cpuWarm
		fmt.Printf("steady state (the last %.0f s): %.0f task reads/s; gap p50 %s  p99 %s  p99.9 %s  max %s (max / interval = %.2f)\n",
			ws, float64(warmReads)/ws, p(steady, 0.5), p(steady, 0.99), p(steady, 0.999), p(steady, 1),
			steady[len(steady)-1].Seconds()/interval.Seconds())
		fmt.Printf("steady state: redis %.0f commands/s (%.2f per task read), redis-server CPU %.2f s; instances' CPU %.2f s (%.0f µs per task read)\n",
			float64(wc)/ws, float64(wc)/float64(max(warmReads, 1)), redisAfter.cpu-redisWarm.cpu,
			wcpu.Seconds(), float64(wcpu.Microseconds())/float64(max(warmReads, 1)))
	}
	fmt.Printf("whole run: redis %.0f commands/s (%.2f per task read); redis-server CPU %.2f s; instances' CPU %.2f s (%.0f µs per task read); the bench's own (simulator upstream) %.2f s\n",
		float64(cmds)/secs, float64(cmds)/float64(max(total, 1)), redisAfter.cpu-redisBefore.cpu, cpu.Seconds(),
		float64(cpu.Microseconds())/float64(max(total, 1)), benchCPU.Seconds())
}

// redisAdmin is a plain client for INFO.
func redisAdmin(env *mainenv.Env, url string) rueidis.Client {
	opt, err := rueidis.ParseURL(url)
	if err != nil {
		env.Fatalf("%v", err)
	}
	opt.DisableCache = true
	c, err := rueidis.NewClient(opt)
	if err != nil {
		env.Fatalf("%v", err)
	}
	return c
}

// redisCounters are the server's commands processed and CPU seconds so far.
type redisCounters struct {
	commands int64
	cpu      float64
}

func redisInfo(env *mainenv.Env, c rueidis.Client) redisCounters {
	info, err := c.Do(context.Background(), c.B().Info().Section("stats", "cpu").Build()).ToString()
	if err != nil {
		env.Fatalf("INFO: %v", err)
	}
	var r redisCounters
	for line := range strings.Lines(info) {
		name, val, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch name {
		case "total_commands_processed":
			r.commands, _ = strconv.ParseInt(val, 10, 64)
		case "used_cpu_sys", "used_cpu_user":
			f, _ := strconv.ParseFloat(val, 64)
			r.cpu += f
		}
	}
	return r
}

// instancesCPU is the user and system CPU time of the instance processes so far, from
// /proc/<pid>/stat (a killed instance not yet waited for still has its line there).
func instancesCPU(procs []*exec.Cmd) time.Duration {
	var sum time.Duration
	for _, cmd := range procs {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
		if err != nil {
			log.Fatal(err)
		}
		// Fields after the command name in parentheses: state is the 3rd field of the line,
		// utime and stime the 14th and 15th, in clock ticks of 1/100 s (USER_HZ).
		_, rest, _ := strings.Cut(string(raw), ") ")
		fields := strings.Fields(rest)
		if len(fields) < 13 {
			log.Fatalf("unexpected /proc stat line: %s", raw)
		}
		for _, f := range fields[11:13] {
			ticks, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				log.Fatal(err)
			}
			sum += time.Duration(ticks) * 10 * time.Millisecond
		}
	}
	return sum
}

// processCPU is the user and system CPU time of this process so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		log.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// read is one upstream read of a task: when, and by which instance.
type read struct {
	at time.Time
	by int
}
