//! Handing memory pages back to the kernel: those of data compiled into the
//! binary once it has been read, and those the heap has freed.

/// Tells the kernel the pages wholly inside `bytes`, a part of the
/// binary's read-only data, are not needed now: they leave the process's
/// resident memory and are read from the executable again if touched.
/// The shipped encoder overlay is read once, at the model's load; without
/// this its 7 MB would stay resident for the life of a server.
pub fn release_static(bytes: &'static [u8]) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(0);
        if page == 0 {
            return;
        }
        let start = bytes.as_ptr() as usize;
        let first = start.div_ceil(page) * page;
        let end = (start + bytes.len()) / page * page;
        if end <= first {
            return;
        }
        // SAFETY: [first, end) lies inside a `'static` shared slice, mapped
        // read-only from the executable; nothing writes it, so dropping its
        // pages loses nothing and a later read faults them in from the file.
        let done =
            unsafe { libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_DONTNEED) };
        if done != 0 {
            tracing::debug!(error = %std::io::Error::last_os_error(), "the compiled-in data's pages stay resident");
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = bytes;
}

/// Returns the pages the heap has freed to the kernel now. mimalloc keeps
/// a freed page for a second and returns it only when it next allocates;
/// a server that has just loaded the model (reading its 90 MB file whole)
/// and built its model index then sat idle with all of it resident: a peak
/// of 246-253 MB over the 1,155-tool union, 229-231 MB with this called
/// after the load and after each index build.
pub fn return_freed_heap() {
    // SAFETY: mi_collect walks only mimalloc's own heaps and arenas; where
    // another allocator serves the process (the tests), they are empty.
    unsafe { libmimalloc_sys::mi_collect(true) };
}

#[cfg(test)]
mod tests {
    use super::*;

    static DATA: [u8; 1 << 16] = {
        let mut data = [0u8; 1 << 16];
        let mut at = 0;
        while at < data.len() {
            data[at] = (at % 251) as u8;
            at += 1;
        }
        data
    };

    #[test]
    fn released_compiled_in_data_reads_the_same_afterwards() {
        let before: u64 = DATA.iter().map(|&b| u64::from(b)).sum();
        release_static(&DATA);
        let after: u64 = DATA.iter().map(|&b| u64::from(b)).sum();
        assert_eq!(before, after);
        assert!(
            DATA.iter()
                .enumerate()
                .all(|(at, &b)| b == (at % 251) as u8)
        );
    }
}
