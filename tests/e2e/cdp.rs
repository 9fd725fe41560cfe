//! A small client of the Chrome DevTools Protocol over `--remote-debugging-pipe`: headless Chromium
//! reads commands on its fd 3 and writes answers and events on its fd 4, each message JSON ended by
//! a NUL byte. Enough to load a page, send it real mouse and key events, and read its DOM back.
//! Every wait is bounded: a browser that stops answering fails the test instead of hanging it.
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// How long any one command may take.
const ANSWER_WITHIN: Duration = Duration::from_secs(10);

/// A headless Chromium with one page attached.
pub struct Browser {
    child: Child,
    commands: ChildStdin,
    messages: Receiver<Value>,
    next_id: u64,
    session: Option<String>,
}

impl Browser {
    /// Starts `program` with a fresh profile in `profile` and attaches to its page, `width` by
    /// `height` CSS pixels.
    pub fn launch(program: &str, profile: &Path, width: u32, height: u32) -> Browser {
        // The shell hands the browser our pipes as its fds 3 and 4 (no unsafe pre_exec needed).
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(r#"exec "$@" 3<&0 4>&1 0</dev/null 1>/dev/null"#)
            .arg("sh")
            .arg(program)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--hide-scrollbars",
                "--remote-debugging-pipe",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {program}: {e}"));
        let commands = child.stdin.take().expect("the browser's command pipe");
        let answers = child.stdout.take().expect("the browser's answer pipe");
        let (tx, messages) = mpsc::channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(answers);
            let mut buf = Vec::new();
            while r.read_until(0, &mut buf).is_ok_and(|n| n > 0) {
                if buf.last() == Some(&0) {
                    buf.pop();
                }
                if let Ok(v) = serde_json::from_slice::<Value>(&buf) {
                    if tx.send(v).is_err() {
                        break;
                    }
                }
                buf.clear();
            }
        });
        let mut b = Browser {
            child,
            commands,
            messages,
            next_id: 1,
            session: None,
        };
        let targets = b.call("Target.getTargets", json!({}));
        let page = targets["targetInfos"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["type"] == "page"))
            .unwrap_or_else(|| panic!("the browser has no page: {targets}"))["targetId"]
            .clone();
        let attached = b.call(
            "Target.attachToTarget",
            json!({"targetId": page, "flatten": true}),
        );
        b.session = attached["sessionId"].as_str().map(str::to_string);
        b.call(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": false}),
        );
        b
    }

    /// Sends one command to the page (or to the browser before a page is attached) and waits for
    /// its answer; panics with the browser's error if it has one.
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let mut msg = json!({"id": id, "method": method, "params": params});
        if let Some(s) = &self.session {
            msg["sessionId"] = json!(s);
        }
        let mut bytes = serde_json::to_vec(&msg).expect("a command is JSON");
        bytes.push(0);
        self.commands
            .write_all(&bytes)
            .unwrap_or_else(|e| panic!("the browser stopped reading commands ({method}): {e}"));
        let deadline = Instant::now() + ANSWER_WITHIN;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let m = self
                .messages
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("no answer to {method} within {ANSWER_WITHIN:?}: {e}"));
            if m["id"] == id {
                assert!(m.get("error").is_none(), "{method} failed: {m}");
                return m["result"].clone();
            }
        }
    }

    /// Opens `url` and waits until `ready` (a JavaScript expression) is true.
    pub fn open(&mut self, url: &str, ready: &str) {
        self.call("Page.navigate", json!({"url": url}));
        let deadline = Instant::now() + ANSWER_WITHIN;
        while self.eval(&format!("!!({ready})")) != json!(true) {
            assert!(
                Instant::now() < deadline,
                "{url} never became ready ({ready})"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The value of a JavaScript expression in the page (null while it throws).
    pub fn eval(&mut self, expr: &str) -> Value {
        let r = self.call(
            "Runtime.evaluate",
            json!({"expression": format!("(() => {{ try {{ return {expr}; }} catch (e) {{ return null; }} }})()"), "returnByValue": true}),
        );
        r["result"]["value"].clone()
    }

    /// The centre of the first element `selector` matches, scrolled into view, in CSS pixels.
    pub fn centre(&mut self, selector: &str) -> (f64, f64) {
        let sel = serde_json::to_string(selector).expect("a selector");
        let r = self.eval(&format!(
            "(() => {{ const e = document.querySelector({sel}); e.scrollIntoView({{block: 'center'}}); \
             const r = e.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; }})()"
        ));
        match (r[0].as_f64(), r[1].as_f64()) {
            (Some(x), Some(y)) => (x, y),
            _ => panic!("nothing on the page matches {selector}"),
        }
    }

    /// Moves the mouse over the element `selector` matches, as a user would.
    pub fn hover(&mut self, selector: &str) {
        let (x, y) = self.centre(selector);
        self.mouse("mouseMoved", x, y);
    }

    /// Clicks the element `selector` matches with the left button, as a user would.
    pub fn click(&mut self, selector: &str) {
        let (x, y) = self.centre(selector);
        self.mouse("mouseMoved", x, y);
        self.mouse("mousePressed", x, y);
        self.mouse("mouseReleased", x, y);
    }

    fn mouse(&mut self, kind: &str, x: f64, y: f64) {
        self.call(
            "Input.dispatchMouseEvent",
            json!({"type": kind, "x": x, "y": y, "button": "left", "buttons": if kind == "mousePressed" { 1 } else { 0 }, "clickCount": 1}),
        );
    }

    /// Types `text` into whatever has the focus, one key at a time.
    pub fn type_text(&mut self, text: &str) {
        for c in text.chars() {
            let key = c.to_string();
            self.call(
                "Input.dispatchKeyEvent",
                json!({"type": "keyDown", "key": key, "text": key, "unmodifiedText": key}),
            );
            self.call(
                "Input.dispatchKeyEvent",
                json!({"type": "keyUp", "key": key}),
            );
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // Closed politely the browser takes its renderer and helper processes with it; killed, it
        // may leave them behind.
        let close = b"{\"id\":0,\"method\":\"Browser.close\",\"params\":{}}\0";
        let _ = self.commands.write_all(close);
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if self.child.try_wait().is_ok_and(|s| s.is_some()) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
