"""The Streamlit dashboard (reads storage only through ``tuners``)."""
