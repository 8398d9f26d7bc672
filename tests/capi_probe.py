"""A C extension compiled at test time against nclx.get_include(), and a
fresh interpreter that imports it (tests/test_review1[56]_capi.py)."""
import os
import subprocess
import sys
import textwrap

import nclx


def build_probe(tmp_path_factory, name, source):
    """Compile ``source`` as the extension module ``name``; its folder."""
    build = tmp_path_factory.mktemp(name)
    (build / f"{name}.c").write_text(source)
    (build / "setup.py").write_text(textwrap.dedent(f"""
        import nclx
        from setuptools import setup, Extension
        setup(ext_modules=[Extension("{name}", ["{name}.c"],
                                     include_dirs=[nclx.get_include()])],
              script_args=["build_ext", "--inplace"])
    """))
    proc = subprocess.run([sys.executable, "setup.py"], cwd=build, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return str(build)


def run_with_probe(probe_dir, code):
    """Run ``code`` in a fresh interpreter that can import the probe."""
    env = dict(os.environ)
    nclx_root = os.path.dirname(os.path.dirname(os.path.abspath(nclx.__file__)))
    env["PYTHONPATH"] = os.pathsep.join([probe_dir, nclx_root, env.get("PYTHONPATH", "")])
    # from the probe's directory: a run from the repository's root would
    # import the source tree's nclx (not built) before the installed one
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                          capture_output=True, text=True, timeout=60, cwd=probe_dir)
