//! The server's own thread and runtime, its listener and connections: independent of the
//! test's runtime (which may run on paused time), so watch timeouts and bookmarks use real
//! time and control calls work from sync and async tests alike.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;
use tokio::task::{AbortHandle, JoinHandle};

use super::Config;
use super::api::{self, Reply};
use super::http;
use super::store::State;
use super::watch;

pub struct Shared {
    pub state: Mutex<State>,
    conns: Mutex<Vec<AbortHandle>>,
}

pub struct Server {
    pub shared: Arc<Shared>,
    pub addr: SocketAddr,
    rt: tokio::runtime::Handle,
    accept: Mutex<Option<JoinHandle<()>>>,
    shutdown: Mutex<Option<oneshot::Sender<()>>>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

async fn serve_conn(shared: Arc<Shared>, stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let (mut rd, mut wr) = stream.into_split();
    let mut buf = Vec::new();
    loop {
        let req = match http::read_request(&mut rd, &mut buf).await {
            Ok(Some(r)) => r,
            _ => return,
        };
        let close = req
            .header("connection")
            .is_some_and(|c| c.eq_ignore_ascii_case("close"));
        let ok = match api::handle(&shared.state, &req, true) {
            Reply::Full(resp) => http::write_response(&mut wr, &resp, req.method == "HEAD").await.is_ok(),
            Reply::Watch(plan) => watch::run(&shared.state, *plan, &mut rd, &mut buf, &mut wr)
                .await
                .is_ok(),
        };
        if !ok || close {
            return;
        }
    }
}

impl Server {
    pub fn start(config: Config) -> Self {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let shared = Arc::new(Shared {
            state: Mutex::new(State::new(config, addr)),
            conns: Mutex::default(),
        });
        let (handle_tx, handle_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("test-apiserver".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("test apiserver runtime");
                handle_tx.send(rt.handle().clone()).expect("send runtime handle");
                rt.block_on(async {
                    let _ = stop_rx.await;
                });
            })
            .expect("spawn test apiserver thread");
        let rt = handle_rx.recv().expect("runtime handle");
        let server = Server {
            shared,
            addr,
            rt,
            accept: Mutex::new(None),
            shutdown: Mutex::new(Some(stop_tx)),
            thread: Mutex::new(Some(thread)),
        };
        server.listen(listener);
        server
    }

    fn listen(&self, listener: std::net::TcpListener) {
        listener.set_nonblocking(true).expect("nonblocking listener");
        let shared = self.shared.clone();
        let task = self.rt.spawn(async move {
            let listener = TcpListener::from_std(listener).expect("tokio listener");
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                };
                let conn = tokio::spawn(serve_conn(shared.clone(), stream));
                let mut conns = shared.conns.lock().expect("conns");
                conns.retain(|c| !c.is_finished());
                conns.push(conn.abort_handle());
            }
        });
        *self.accept.lock().expect("accept") = Some(task);
    }

    /// Waits (from any thread, inside a runtime or not) until a task of the server's runtime
    /// has ended.
    fn join(&self, task: JoinHandle<()>) {
        let rt = self.rt.clone();
        let _ = std::thread::spawn(move || {
            let _ = rt.block_on(task);
        })
        .join();
    }

    /// Resets every open connection (no terminating chunk: the client sees a broken stream).
    pub fn drop_connections(&self) {
        let conns: Vec<AbortHandle> = self.shared.conns.lock().expect("conns").drain(..).collect();
        for c in &conns {
            c.abort();
        }
        // Let the runtime run the cancellations before returning (timers only fire on the
        // runtime's own thread, so the wait runs there).
        let wait = self.rt.spawn(async move {
            for _ in 0..500 {
                if conns.iter().all(AbortHandle::is_finished) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        });
        self.join(wait);
    }

    /// Down: the listener is closed (connections are refused) and open connections reset.
    /// Up: the same port is bound again.
    pub fn set_down(&self, down: bool) {
        if down {
            let task = self.accept.lock().expect("accept").take();
            if let Some(task) = task {
                task.abort();
                self.join(task);
            }
            self.drop_connections();
        } else if self.accept.lock().expect("accept").is_none() {
            let mut last = None;
            for _ in 0..200 {
                match std::net::TcpListener::bind(self.addr) {
                    Ok(l) => {
                        self.listen(l);
                        return;
                    }
                    Err(e) => last = Some(e),
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            panic!("test apiserver could not bind {} again: {last:?}", self.addr);
        }
    }

    /// Stops the server and its thread (idempotent).
    pub fn stop(&self) {
        let Some(tx) = self.shutdown.lock().expect("shutdown").take() else {
            return;
        };
        self.set_down(true);
        let _ = tx.send(());
        if let Some(t) = self.thread.lock().expect("thread").take() {
            let _ = t.join();
        }
    }
}
