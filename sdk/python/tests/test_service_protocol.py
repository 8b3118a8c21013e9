"""Unit tests of oarbank_sdk.service_protocol; sdk_test.go runs them with
Debian's python3 and validates the SDK's output against the schemas."""

import datetime
import io
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from oarbank_sdk import service_protocol as sp  # noqa: E402


class TestResults(unittest.TestCase):
    def test_serialise(self):
        cases = [
            (sp.Fingerprint(healthy=True), {"healthy": True}),
            (
                sp.Fingerprint(healthy=False, running=True, message="m", attrs={"s": "x", "n": 2, "f": 0.5, "b": False},
                               pools={"p": 0, "q": 2**63 - 1}, reserve=sp.Reserve(mem_gb=0)),
                {"healthy": False, "running": True, "message": "m", "attrs": {"s": "x", "n": 2, "f": 0.5, "b": False},
                 "pools": {"p": 0, "q": 2**63 - 1}, "reserve": {"mem_gb": 0}},
            ),
            (sp.OpResult(), {"ok": True, "changed": False}),
            (sp.OpResult(ok=False, changed=True, escalated=True, message="m"), {"ok": False, "changed": True, "escalated": True, "message": "m"}),
            (sp.Status(running=True, ready=False), {"running": True, "ready": False}),
            (sp.Status(running=False, ready=False, message="not running"), {"running": False, "ready": False, "message": "not running"}),
            (sp.OwnedList(), {"objects": []}),
            (
                sp.OwnedList(objects=[sp.Object(id="v", kind="vm", labels={"a": "b"},
                                                created_at=datetime.datetime(2026, 12, 1, 18, 0, tzinfo=datetime.timezone(datetime.timedelta(hours=1))),
                                                busy=False)]),
                {"objects": [{"id": "v", "kind": "vm", "labels": {"a": "b"}, "created_at": "2026-12-01T17:00:00Z", "busy": False}]},
            ),
        ]
        for doc, want in cases:
            with self.subTest(doc=doc):
                self.assertEqual(doc.to_json(), want)

    def test_refused(self):
        # Each makes a document the schemas refuse, or one svcrun would
        # misread: construction fails.
        cases = {
            "unknown field": (TypeError, lambda: sp.Status(running=True, ready=True, runing=True)),
            "missing required": (TypeError, lambda: sp.Status(running=True)),
            "missing healthy": (TypeError, lambda: sp.Fingerprint(running=True)),
            "positional": (TypeError, lambda: sp.Status(True, True)),
            "int for bool": (TypeError, lambda: sp.Status(running=1, ready=True)),
            "str message": (TypeError, lambda: sp.OpResult(message=3)),
            "lone surrogate": (ValueError, lambda: sp.OpResult(message="\ud800")),
            "bool pool": (TypeError, lambda: sp.Fingerprint(healthy=True, pools={"p": True})),
            "float pool": (TypeError, lambda: sp.Fingerprint(healthy=True, pools={"p": 1.0})),
            "negative pool": (ValueError, lambda: sp.Fingerprint(healthy=True, pools={"p": -1})),
            "huge pool": (ValueError, lambda: sp.Fingerprint(healthy=True, pools={"p": 2**63})),
            "NaN attr": (ValueError, lambda: sp.Fingerprint(healthy=True, attrs={"a": math.nan})),
            "list attr": (TypeError, lambda: sp.Fingerprint(healthy=True, attrs={"a": [1]})),
            "None attr": (TypeError, lambda: sp.Fingerprint(healthy=True, attrs={"a": None})),
            "negative mem": (ValueError, lambda: sp.Reserve(mem_gb=-0.1)),
            "reserve as float": (TypeError, lambda: sp.Fingerprint(healthy=True, reserve=0.5)),
            "kind": (ValueError, lambda: sp.Object(id="a", kind="disk", labels={})),
            "labels missing": (TypeError, lambda: sp.Object(id="a", kind="vm")),
            "label value": (TypeError, lambda: sp.Object(id="a", kind="vm", labels={"a": 1})),
            "id flag": (ValueError, lambda: sp.Object(id="-rf", kind="vm", labels={})),
            "id space": (ValueError, lambda: sp.Object(id="a b", kind="vm", labels={})),
            "id nbsp": (ValueError, lambda: sp.Object(id="a\u00a0b", kind="vm", labels={})),
            "id control": (ValueError, lambda: sp.Object(id="a\x7f", kind="vm", labels={})),
            "id format": (ValueError, lambda: sp.Object(id="a\u200bb", kind="vm", labels={})),
            "id empty": (ValueError, lambda: sp.Object(id="", kind="vm", labels={})),
            "id long": (ValueError, lambda: sp.Object(id="é" * 129, kind="vm", labels={})),
            "naive time": (ValueError, lambda: sp.Object(id="a", kind="vm", labels={}, created_at=datetime.datetime(2026, 1, 1))),
            "no zone": (ValueError, lambda: sp.Object(id="a", kind="vm", labels={}, created_at="2026-12-01T17:00:00")),
            "no seconds": (ValueError, lambda: sp.Object(id="a", kind="vm", labels={}, created_at="2026-12-01T17:00Z")),
            "31 February": (ValueError, lambda: sp.Object(id="a", kind="vm", labels={}, created_at="2026-02-31T17:00:00Z")),
            "object dict": (TypeError, lambda: sp.OwnedList(objects=[{"id": "a", "kind": "vm", "labels": {}}])),
        }
        for name, (exc, make) in cases.items():
            with self.subTest(name):
                self.assertRaises(exc, make)

    def test_id_limit(self):
        sp.valid_object_id("é" * 128)  # 256 bytes
        sp.valid_object_id("db-漢字")

    def test_slots(self):
        s = sp.Status(running=True, ready=True)
        with self.assertRaises(AttributeError):
            s.runing = True
        # A slot reassigned with a wrong value is caught when printed.
        s.ready = "yes"
        self.assertRaises(TypeError, s.to_json)


ENV = {"OARBANK_MODULE_DATA": "/data", "OARBANK_MODULE": "mc", "OARBANK_SERVICE": "memcached", "OARBANK_NODE_ID": "node-1"}


class TestEnv(unittest.TestCase):
    def test_labels(self):
        e = sp.Env.from_environ(ENV)
        self.assertEqual(e.full_name, "mc/memcached")
        self.assertEqual(e.path("run", "x.sock"), "/data/run/x.sock")
        labels = e.labels("a1")
        self.assertEqual(labels, {"oarbank.attempt_id": "a1", "oarbank.node": "node-1", "oarbank.service": "mc/memcached"})
        self.assertTrue(e.owns(labels))
        self.assertFalse(e.owns({**labels, "oarbank.node": "node-2"}))
        self.assertFalse(e.owns({**labels, "oarbank.service": "mc/other"}))
        self.assertFalse(e.owns({**labels, "oarbank.attempt_id": ""}))

    def test_missing(self):
        for name in ("OARBANK_MODULE_DATA", "OARBANK_MODULE", "OARBANK_SERVICE", "OARBANK_NODE_ID"):
            with self.subTest(name):
                env = {k: v for k, v in ENV.items() if k != name}
                with self.assertRaisesRegex(sp.NotRunBySvcrun, name):
                    sp.Env.from_environ(env)

    def files(self, settings=None, tools=None, limits=None):
        d = tempfile.mkdtemp()
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", d]))
        env = dict(ENV, OARBANK_MODULE_DATA=d)
        for var, name, text in (("OARBANK_SETTINGS_FILE", "settings.json", settings), ("OARBANK_TOOLS_FILE", "tools.json", tools),
                                ("OARBANK_LIMITS_FILE", "limits.json", limits)):
            env[var] = os.path.join(d, name)
            if text is not None:
                with open(env[var], "w") as f:
                    f.write(text)
        return sp.Env.from_environ(env)

    def test_files(self):
        env = self.files('{"memory_mb": 32, "name": "x", "ratio": 1, "on": true}', '{"jq": "/usr/bin/jq"}', '{"mem_gb": 0.5, "pids": 256}')
        c = sp.Call.load(env, "start")
        self.assertEqual(c.setting("memory_mb", 64), 32)
        self.assertEqual(c.setting("absent", 64), 64)
        self.assertEqual(c.setting("ratio", 0.5), 1.0)
        self.assertIs(c.setting("on"), True)
        self.assertRaisesRegex(ValueError, "setting 'name'", c.setting, "name", 1)
        self.assertRaisesRegex(ValueError, "setting 'on'", c.setting, "on", 1)
        self.assertEqual(c.tools, {"jq": "/usr/bin/jq"})
        self.assertEqual(c.limits, sp.Limits(mem_gb=0.5, pids=256))

    def test_files_missing(self):
        c = sp.Call.load(self.files(), "start")
        self.assertEqual((c.settings, c.tools, c.limits), ({}, {}, sp.Limits()))

    def test_files_bad(self):
        for kw, want in (({"settings": "[1]"}, "settings"), ({"settings": "{"}, "settings"), ({"tools": '{"a": 1}'}, "tools"),
                         ({"limits": '{"pids": 1.5}'}, "limits"), ({"limits": '{"mem_gb": "1"}'}, "limits")):
            with self.subTest(kw):
                with self.assertRaisesRegex(ValueError, "read the " + want):
                    sp.Call.load(self.files(**kw), "start")


class Svc(sp.Service):
    """Each op does what self.do[op] says."""

    def __init__(self, **do):
        self.do = do

    def _op(self, call, default):
        f = self.do.get(call.op)
        return f(call) if f else default

    def fingerprint(self, call):
        return self._op(call, sp.Fingerprint(healthy=True, running=False))

    def start(self, call):
        return self._op(call, sp.OpResult(changed=True))

    def stop(self, call):
        return self._op(call, sp.OpResult())

    def status(self, call):
        return self._op(call, sp.Status(running=False, ready=False))

    def ready(self, call):
        return self._op(call, sp.Status(running=False, ready=False))

    def list_owned(self, call):
        return self._op(call, sp.OwnedList())

    def destroy(self, call, id, force):
        return self._op(call, sp.OpResult(message=f"{id} {force}"))


def raise_(e):
    raise e


class TestRun(unittest.TestCase):
    def run_op(self, impl, *args, probe=False):
        out, err = io.BytesIO(), io.StringIO()
        code = sp.run(impl, list(args), ENV, out, err, probe=probe)
        text = out.getvalue().decode()
        self.assertEqual(text.count("\n"), 1, f"stdout {text!r} is not one line")
        return code, json.loads(text), err.getvalue()

    def test_outcomes(self):
        bad_running = Svc(fingerprint=lambda c: sp.Fingerprint(healthy=True))
        cases = [
            ("start", Svc(), ["start"], False, 0, {"ok": True, "changed": True}),
            ("destroy", Svc(), ["destroy", "v1"], False, 0, {"ok": True, "changed": False, "message": "v1 False"}),
            ("destroy --force", Svc(), ["destroy", "v1", "--force"], False, 0, {"ok": True, "changed": False, "message": "v1 True"}),
            ("probe", Svc(fingerprint=lambda c: sp.Fingerprint(healthy=True)), ["fingerprint"], True, 0, {"healthy": True}),
            ("no op", Svc(), [], False, 2, {"message": "no op given"}),
            ("unknown op", Svc(), ["restart"], False, 2, None),
            ("probe start", Svc(), ["start"], True, 2, {"ok": False, "changed": False, "message": "a probe implements only fingerprint, not start"}),
            ("status args", Svc(), ["status", "x"], False, 2, None),
            ("destroy no id", Svc(), ["destroy"], False, 2, None),
            ("destroy bad flag", Svc(), ["destroy", "v1", "-f"], False, 2, None),
            ("destroy bad id", Svc(), ["destroy", "-rf"], False, 2, None),
            ("raises in start", Svc(start=lambda c: raise_(RuntimeError("no disk"))), ["start"], False, 1, {"ok": False, "changed": False, "message": "no disk"}),
            ("raises in status", Svc(status=lambda c: raise_(OSError("boom"))), ["status"], False, 1, {"message": "boom"}),
            ("OpFailed", Svc(stop=lambda c: raise_(sp.OpFailed("busy", 3))), ["stop"], False, 3, {"ok": False, "changed": False, "message": "busy"}),
            ("OpFailed out of range", Svc(stop=lambda c: raise_(sp.OpFailed("busy", 300))), ["stop"], False, 1, None),
            ("ok False", Svc(start=lambda c: sp.OpResult(ok=False, message="no")), ["start"], False, 1, {"ok": False, "changed": False, "message": "no"}),
            ("wrong type", Svc(status=lambda c: {"running": True, "ready": True}), ["status"], False, 1, {"message": "status returned dict, want Status"}),
            ("service without running", bad_running, ["fingerprint"], False, 1, None),
            ("probe without running", bad_running, ["fingerprint"], True, 0, {"healthy": True}),
            ("sys.exit", Svc(start=lambda c: sys.exit(4)), ["start"], False, 4, {"ok": False, "changed": False, "message": "start called sys.exit(4) instead of returning a result or raising"}),
            ("sys.exit(0)", Svc(status=lambda c: sys.exit(0)), ["status"], False, 1, None),
            ("empty exception", Svc(ready=lambda c: raise_(KeyError())), ["ready"], False, 1, {"message": "KeyError"}),
        ]
        for name, impl, args, probe, want_code, want_doc in cases:
            with self.subTest(name):
                code, doc, err = self.run_op(impl, *args, probe=probe)
                self.assertEqual(code, want_code, err)
                if want_doc is not None:
                    self.assertEqual(doc, want_doc)
                if code != 0:
                    self.assertIn("message", doc)
                    self.assertNotIn("Traceback", json.dumps(doc))

    def test_not_run_by_svcrun(self):
        out, err = io.BytesIO(), io.StringIO()
        code = sp.run(Svc(), ["fingerprint"], {}, out, err)
        self.assertEqual((code, json.loads(out.getvalue())), (1, {"message": "not run by svcrun: OARBANK_MODULE_DATA is not set"}))

    def test_abstract(self):
        class Half(sp.Service):
            def fingerprint(self, call):
                return sp.Fingerprint(healthy=True, running=False)

        self.assertRaises(TypeError, Half)


class TestDaemon(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(lambda: subprocess.run(["rm", "-rf", self.dir]))

    def daemon(self, *argv, log=True):
        d = sp.Daemon(pid_file=os.path.join(self.dir, "d.pid"), argv=list(argv), log_file=os.path.join(self.dir, "d.log") if log else None)
        self.addCleanup(lambda: d.stop(0))
        return d

    def test_lifecycle(self):
        d = self.daemon("/bin/sleep", "3600")
        self.assertFalse(d.alive())
        self.assertEqual(d.pid(), (0, False))
        self.assertTrue(d.start())
        pid, ok = d.pid()
        self.assertTrue(ok)
        # Its own session, stdin /dev/null, output in its log.
        self.assertEqual(os.getsid(pid), pid)
        self.assertNotEqual(os.getpgid(pid), os.getpgid(0))
        self.assertEqual(os.readlink(f"/proc/{pid}/fd/0"), "/dev/null")
        for fd in (1, 2):
            self.assertEqual(os.readlink(f"/proc/{pid}/fd/{fd}"), os.path.join(self.dir, "d.log"))
        self.assertFalse(d.start(), "a second start started another")
        self.assertEqual(d.pid()[0], pid)
        self.assertEqual(d.stop(10), (True, False))
        self.assertFalse(sp.alive(pid))
        self.assertFalse(os.path.exists(d.pid_file))
        self.assertEqual(d.stop(10), (False, False))

    def test_no_log(self):
        d = self.daemon("/bin/sleep", "3600", log=False)
        d.start()
        pid = d.pid()[0]
        for fd in (0, 1, 2):
            self.assertEqual(os.readlink(f"/proc/{pid}/fd/{fd}"), "/dev/null")

    def test_escalate(self):
        # sh ignores TERM, and so does the sleep it waits for; ready says
        # so once the trap is set.
        ready = os.path.join(self.dir, "trapped")
        d = self.daemon("/bin/sh", "-c", f"trap '' TERM; touch {ready}; while :; do sleep 1; done")
        d.start()
        deadline = time.monotonic() + 60
        while not os.path.exists(ready):
            self.assertLess(time.monotonic(), deadline, "the daemon never set its trap")
            time.sleep(0.02)
        pid = d.pid()[0]
        self.assertEqual(d.stop(0.2), (True, True))
        self.assertFalse(sp.alive(pid))

    def test_not_this_daemon(self):
        d = self.daemon("/bin/sleep", "3600")
        cases = {
            "garbled": "12ab\n",
            "another program": f"{os.getpid()}\n",  # this python, not sleep
        }
        for name, text in cases.items():
            with self.subTest(name):
                with open(d.pid_file, "w") as f:
                    f.write(text)
                self.assertFalse(d.alive())
        # A daemon whose pid file names another program starts anew.
        self.assertTrue(d.start())
        self.assertTrue(d.alive())

    def test_script(self):
        # A script daemon runs as its interpreter: known by its path.
        script = os.path.join(self.dir, "beat")
        with open(script, "w") as f:
            f.write("#!/usr/bin/python3 -IB\nimport time\ntime.sleep(3600)\n")
        os.chmod(script, 0o755)
        d = self.daemon(script, "serve")
        self.assertTrue(d.start())
        self.assertTrue(d.alive())
        self.assertFalse(d.start())
        self.assertEqual(d.stop(10), (True, False))

    def test_zombie(self):
        p = subprocess.Popen(["/bin/true"])
        deadline = time.monotonic() + 60
        # Exited but not reaped: kill(pid, 0) still finds it.
        while sp.alive(p.pid):
            self.assertLess(time.monotonic(), deadline, "true did not exit")
            time.sleep(0.02)
        os.kill(p.pid, 0)
        p.wait()

    def test_start_fails(self):
        d = self.daemon(os.path.join(self.dir, "missing"))
        self.assertRaisesRegex(OSError, "start .*missing", d.start)
        self.assertFalse(os.path.exists(d.pid_file))


class TestVersion(unittest.TestCase):
    def test_version(self):
        self.assertEqual(sp.PROTOCOL_VERSION, 1)
        self.assertEqual(int(sp.__version__.split(".")[0]), sp.PROTOCOL_VERSION)


if __name__ == "__main__":
    unittest.main()
